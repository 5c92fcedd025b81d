#pragma once
// Where an image's rows end in a prompt: the row after an image's last, where the engine ends a
// prefill chunk (runtime/engine/engine.hpp) and the tiers may anchor a state off the grid.
#include <cstddef>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

// Whether tokens[p - 1] is an image's last row: an image row with no image row after it (p is
// the prompt's end, or tokens[p] is text). False for p == 0 or p past the end.
inline bool image_ends_at(const std::vector<token_id>& tokens, std::size_t p) {
  return p > 0 && p <= tokens.size() && is_image_row(tokens[p - 1]) &&
         (p == tokens.size() || !is_image_row(tokens[p]));
}

}  // namespace anchorage
