#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

// How many leading tokens `a` and `b` share.
inline std::size_t common_prefix(const std::vector<token_id>& a, const std::vector<token_id>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  return static_cast<std::size_t>(
      std::mismatch(a.begin(), a.begin() + static_cast<long>(n), b.begin()).first - a.begin());
}

}  // namespace anchorage
