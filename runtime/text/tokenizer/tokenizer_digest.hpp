#pragma once
#include <cstdint>

#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

// A digest of what the tokenizer's ids mean: for every id of its vocabulary, whether it is
// defined and its bytes (XXH3 64). Two tokenizers have the same digest only when every id means
// the same bytes: the persistent suffix store names its log by it (docs/SUFFIX_STORE.md).
std::uint64_t tokenizer_digest(const tokenizer& tok);

}  // namespace anchorage
