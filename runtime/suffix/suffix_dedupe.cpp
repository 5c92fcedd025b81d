#include "runtime/suffix/suffix_dedupe.hpp"

#include <algorithm>

namespace anchorage {

suffix_admission suffix_dedupe::admit(const std::vector<token_id>& tokens) const {
  suffix_admission best;
  bool best_at_tail = false, best_whole = false;
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) {  // newest first
    const auto& held = it->tokens;
    const std::size_t limit = std::min(held.size(), tokens.size());
    const std::size_t common = static_cast<std::size_t>(
        std::mismatch(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(limit), held.begin())
            .first -
        tokens.begin());
    const bool better =
        common > best.skip || (common == best.skip && common > 0 && it->at_tail && !best_at_tail);
    if (better) {
      best.skip = common;
      best_at_tail = it->at_tail;
      best_whole = common == held.size();
    }
  }
  best.continues = best.skip > 0 && best_at_tail && best_whole;
  return best;
}

void suffix_dedupe::remember(std::vector<token_id> tokens, bool at_tail) {
  if (at_tail) forget_tail();
  recent_.push_back({std::move(tokens), at_tail});
  while (recent_.size() > keep_) recent_.pop_front();
}

void suffix_dedupe::forget_tail() {
  for (auto& e : recent_) e.at_tail = false;
}

}  // namespace anchorage
