#pragma once
#include <climits>
#include <cstddef>
#include <cstdint>

namespace anchorage {

// One vocabulary entry. Valid ids are 0 .. vocab_size()-1 (see runtime/text/tokenizer/tokenizer.hpp).
using token_id = std::int32_t;

// The key ids an image's rows carry in place of vocabulary ids (runtime/image/image_rows.hpp):
// INT32_MIN plus a 30-bit payload, so negative and far from small sentinels. An image's first
// image_key_rows ids pin its whole digest; a cached prefix never ends among them
// (runtime/core/token_prefix.hpp).
inline constexpr std::int64_t image_row_id_first = INT32_MIN;                                   // inclusive
inline constexpr std::int64_t image_row_id_end = image_row_id_first + (std::int64_t{1} << 30);  // exclusive
inline constexpr std::size_t image_key_rows = 5;
inline bool is_image_row(token_id id) { return id >= image_row_id_first && id < image_row_id_end; }

}  // namespace anchorage
