#pragma once
// Key ids for the tests that put an image's rows in a prompt (runtime/core/token.hpp: an image's
// rows carry negative key ids in place of its placeholder), made the same way in every such test.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage::testing {

// The key id of row `row` of image `image`: distinct per (image, row) while row < 1000.
inline token_id image_row_id(std::uint32_t image, std::size_t row) {
  return static_cast<token_id>(image_row_id_first + image * 1000 + static_cast<std::int64_t>(row));
}

// An image's rows: its first n key ids.
inline std::vector<token_id> image_rows(std::uint32_t image, std::size_t n) {
  std::vector<token_id> rows;
  for (std::size_t r = 0; r < n; ++r) rows.push_back(image_row_id(image, r));
  return rows;
}

// The parts one after another.
inline std::vector<token_id> cat(std::initializer_list<std::vector<token_id>> parts) {
  std::vector<token_id> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// n ids: image `image`'s rows at [from, from + rows), text(i) (a token_id) at every other i.
template <class Text>
std::vector<token_id> prompt_with_image(std::size_t n, std::size_t from, std::size_t rows,
                                        std::uint32_t image, Text text) {
  std::vector<token_id> t(n);
  for (std::size_t i = 0; i < n; ++i)
    t[i] = i >= from && i < from + rows ? image_row_id(image, i - from) : text(i);
  return t;
}

}  // namespace anchorage::testing
