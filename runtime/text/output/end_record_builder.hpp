#pragma once
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/text/output/end_alignment.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

// What a finished generation leaves for the end alignment: the tokens of rows [0, rows)
// (the served prompt, then the output tokens the engine forwarded; a pending token that was
// sampled and never forwarded is not in the rows), where the output begins, the reasoning span
// and the hidden spans, all as row positions.
struct generation_outcome {
  const std::vector<token_id>* served = nullptr;            // the prompt the engine ran
  const std::vector<token_id>* output = nullptr;            // every output token, forwarded or pending
  std::vector<std::pair<std::size_t, std::size_t>> hidden;  // [a, b) indices into *output
  std::optional<std::size_t> reasoning_end;                 // index into *output of the closing </think>
  bool starts_in_reasoning = false;                         // the prompt opened <think>
  std::size_t rows = 0;                                     // the engine's valid length
  tokenizer tok;                                            // what the ids mean (the record's)
};

// Throws std::logic_error when rows is not within [served.size(), served.size() + output.size()].
end_record build_end_record(const generation_outcome& g);

}  // namespace anchorage
