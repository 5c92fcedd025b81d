#pragma once
// The slot's measured prefill rate (tokens/s), from the chunks its requests prefill: the cost
// rule every tier's offer weighs a read against (tier_lookup::prefill_tokens_per_s). Measured
// by the slot's coordinator (cache_tiers), which sees every request begin and every chunk end.
#include <cstddef>
#include <cstdint>

#include "runtime/disk/rate_average.hpp"

namespace anchorage {

class prefill_meter {
 public:
  // A request's prefill starts at `len` rows, at `now_ns`.
  void begin(std::size_t len, std::int64_t now_ns) {
    len_ = len;
    ns_ = now_ns;
  }
  // A chunk ended with `len` rows at `now_ns`: the rows since the last mark, over the time.
  void step(std::size_t len, std::int64_t now_ns) {
    if (len > len_ && now_ns > ns_)
      rate_ = blend_rate(rate_, static_cast<double>(len - len_) * 1e9 / static_cast<double>(now_ns - ns_));
    len_ = len;
    ns_ = now_ns;
  }
  // 0 until a chunk was measured.
  double tokens_per_s() const { return rate_; }

 private:
  double rate_ = 0;
  std::size_t len_ = 0;
  std::int64_t ns_ = 0;
};

}  // namespace anchorage
