#include "runtime/speculative/draft_length.hpp"

#include <algorithm>

namespace anchorage {

draft_length::draft_length(int draft_max)
    : max_(std::max(draft_max, 0)), length_(std::min(std::max(draft_max, 0), 4)) {}

int draft_length::next() {
  if (max_ == 0) return 0;
  if (pause_left_ > 0) {
    --pause_left_;
    return 0;
  }
  return length_;
}

void draft_length::settle(int drafted, int accepted) {
  if (drafted <= 0) return;
  accepted = std::clamp(accepted, 0, drafted);
  length_ =
      accepted == drafted ? std::min(max_, std::max(1, 2 * drafted)) : std::clamp(accepted + 1, 1, max_);
  ++window_rounds_;
  window_drafted_ += drafted;
  window_accepted_ += accepted;
  if (window_rounds_ < window) return;
  const bool pays = window_accepted_ >= pays_below * window_drafted_;
  window_rounds_ = window_drafted_ = window_accepted_ = 0;
  if (pays) {
    next_pause_ = first_pause;
    return;
  }
  pause_left_ = next_pause_;
  next_pause_ = std::min(longest_pause, 2 * next_pause_);
  ++pauses_;
  length_ = 1;  // the round after the pause tries one draft
}

}  // namespace anchorage
