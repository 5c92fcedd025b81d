#include "runtime/board/slot_policy.hpp"

namespace anchorage {

std::optional<slot_choice> slot_policy::choose(const std::string& session_key,
                                               const std::vector<slot_view>& slots) const {
  std::optional<slot_choice> best_shared, empty, least;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    const slot_view& s = slots[k];
    if (s.busy) continue;
    if (s.resumes > 0) {
      const bool better = !best_shared || s.resumes > best_shared->shared ||
                          (s.resumes == best_shared->shared && s.session_key == session_key &&
                           slots[best_shared->slot].session_key != session_key);
      if (better) best_shared = slot_choice{k, slot_reason::shared, s.resumes};
    }
    const std::size_t held = s.resident ? s.resident->size() : 0;
    if (held == 0) {
      if (!empty) empty = slot_choice{k, slot_reason::empty, 0};
      continue;
    }
    const slot_view* l = least ? &slots[least->slot] : nullptr;
    if (!l || s.last_used < l->last_used ||
        (s.last_used == l->last_used && held < (l->resident ? l->resident->size() : 0)))
      least = slot_choice{k, slot_reason::least_worth, 0};
  }
  if (best_shared) return best_shared;
  if (empty) return empty;
  return least;
}

const char* to_string(slot_reason r) {
  switch (r) {
    case slot_reason::shared:
      return "shared";
    case slot_reason::empty:
      return "empty";
    case slot_reason::least_worth:
      return "least_worth";
  }
  return "?";
}

}  // namespace anchorage
