#include "runtime/tiers/guest_stash.hpp"

#include <algorithm>

namespace anchorage {

bool guest_stash::take(const state_adapter& state, std::size_t at, std::size_t resident_rows,
                       std::size_t need) {
  const std::size_t a = at, b = std::min(resident_rows, at + need);
  const std::size_t bytes = row_copy::bytes_for(state.layout(), a, b);
  if (b > a && !budget_.reserve(budget_pool::stash, bytes)) {
    ++refusals_;
    return false;
  }
  try {
    rows_ = row_copy::take(state, where_, a, std::max(a, b));
  } catch (...) {
    if (b > a) budget_.release(budget_pool::stash, bytes);
    throw;
  }
  bytes_ = b > a ? bytes : 0;
  holding_ = true;
  ++stashed_;
  return true;
}

void guest_stash::give_back(state_adapter& state) {
  if (!holding_) return;
  row_copy rows = std::move(rows_);
  rows_ = row_copy{};
  budget_.release(budget_pool::stash, bytes_);
  bytes_ = 0;
  holding_ = false;
  rows.restore(state);
}

}  // namespace anchorage
