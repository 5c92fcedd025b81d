#pragma once
#include <cstddef>

namespace anchorage {

// What one tier answered: hits (offers taken and restored), misses (lookups it had nothing
// for) and the prompt tokens its hits saved from a prefill.
class tier_counters {
 public:
  void hit(std::size_t resumed_at) {
    ++hits_;
    tokens_saved_ += static_cast<long long>(resumed_at);
  }
  void miss() { ++misses_; }

  long hits() const { return hits_; }
  long misses() const { return misses_; }
  long long tokens_saved() const { return tokens_saved_; }

 private:
  long hits_ = 0;
  long misses_ = 0;
  long long tokens_saved_ = 0;
};

}  // namespace anchorage
