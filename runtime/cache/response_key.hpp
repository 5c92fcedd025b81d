#pragma once
// The identity of a determined request for the response cache (docs/CACHES.md, "The response
// cache"): two requests with equal keys produce the same output tokens, so the second may be
// answered with the first one's. Plain data compared field by field, the prompt token by token:
// a digest only picks the bucket.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/board_job.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

struct response_key {
  std::uint64_t fingerprint = 0;  // the engine's (state_layout::fingerprint): weights, code, grid
  request_kind route = request_kind::completion;
  std::vector<token_id> prompt;  // as the conductor rendered it, before any end alignment
  long max_tokens = 0;           // as clamped to the context
  std::vector<token_id> stop_tokens;
  std::vector<std::string> stop_strings;
  std::string tools;  // the tool definitions the output is parsed against (compact JSON), or ""
  std::string tool_choice;
  std::string response_format;
  std::vector<std::pair<token_id, float>> logit_bias;
  bool seed_explicit = false;
  std::uint64_t seed = 0;  // only when explicit (a server-chosen seed changes nothing greedy)
  double top_p = 1.0;
  bool parse_reasoning = false;
  bool parse_tool_calls = false;
  bool starts_in_reasoning = false;
  long reasoning_budget = -1;

  bool operator==(const response_key& o) const;
  bool operator!=(const response_key& o) const { return !(*this == o); }
  // Bytes it holds (its vectors' and strings' contents and the struct), for the budget.
  std::size_t bytes() const;
};

// The key of `j` on an engine of `fingerprint`, or nullopt when `j`'s output is not determined by
// it: not greedy (j.client()->greedy unset: an omitted temperature is 1.0), or a request whose prompt the
// board may replace (a compaction request, the compaction worker's idle work).
std::optional<response_key> response_key_of(const board_job& j, std::uint64_t fingerprint);

// XXH3-64 over every field: the bucket a key is looked up in.
std::uint64_t response_key_digest(const response_key& k);

}  // namespace anchorage
