#pragma once
// How many tokens one drafter drafts next (docs/SPECULATIVE.md), from the acceptance it has seen:
// the length doubles after a round that accepted every draft and falls to one more than the
// accepted count after one that did not; a drafter whose recent rounds accepted under a tenth of
// their drafts pauses (drafts nothing) for a while that doubles each time it pauses again, then
// tries one round.
#include <cstddef>

namespace anchorage {

class draft_length {
 public:
  explicit draft_length(int draft_max);

  // The drafts to ask for now: 0 while paused (each call then counts one step of the pause).
  int next();
  // A round of `drafted` drafts accepted `accepted` of them (accepted <= drafted, drafted >= 1).
  void settle(int drafted, int accepted);

  bool paused() const { return pause_left_ > 0; }
  long pauses() const { return pauses_; }
  int current() const { return length_; }

  static constexpr int window = 8;           // rounds the acceptance rate is taken over
  static constexpr double pays_below = 0.1;  // accepted / drafted under this: pause
  static constexpr int first_pause = 16;     // steps; doubled at each pause after the first
  static constexpr int longest_pause = 1024;

 private:
  int max_;
  int length_;
  int window_rounds_ = 0, window_drafted_ = 0, window_accepted_ = 0;
  int pause_left_ = 0;
  int next_pause_ = first_pause;
  long pauses_ = 0;
};

}  // namespace anchorage
