#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

// Whether tokens[0, n) ends inside an image's first image_key_rows rows (runtime/core/token.hpp):
// a state of those rows is keyed by only part of the image's digest, which another image may
// share, so no cached state is ever reused there.
inline bool ends_in_image_key_rows(const std::vector<token_id>& tokens, std::size_t n) {
  std::size_t rows = 0;  // image rows at tokens[n - rows, n), counted up to image_key_rows
  while (rows < n && rows < image_key_rows && is_image_row(tokens[n - 1 - rows])) ++rows;
  return rows > 0 && rows < image_key_rows;
}

// How many leading tokens `a` and `b` share, as far as a cached state may be reused: a match
// that ends inside an image's first image_key_rows rows (runtime/core/token.hpp) stops at the
// image's first row instead, since those rows have compared only part of the image's digest.
// An image's rows are the run of image-row ids that holds the match's end (the chat template
// puts text between two images: <|vision_end|> and <|vision_start|>).
inline std::size_t common_prefix(const std::vector<token_id>& a, const std::vector<token_id>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t shared = static_cast<std::size_t>(
      std::mismatch(a.begin(), a.begin() + static_cast<long>(n), b.begin()).first - a.begin());
  if (shared == 0 || !is_image_row(a[shared - 1])) return shared;
  std::size_t first = shared - 1;  // the image's first row
  while (first > 0 && is_image_row(a[first - 1])) --first;
  // (every image has at least image_key_rows rows: runtime/image/image_processor_config.hpp)
  return shared - first >= image_key_rows ? shared : first;
}

}  // namespace anchorage
