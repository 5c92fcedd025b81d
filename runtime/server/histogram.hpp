#pragma once
// A Prometheus histogram (text format 0.0.4): how many observations fell at or below each of a
// fixed list of upper bounds, their sum and their count, so that a scraper can take percentiles
// (histogram_quantile) where a summary's sum and count give only the mean. One owner.
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace anchorage {

class histogram {
 public:
  // `bounds`: ascending, finite; the +Inf bucket is implicit. std::invalid_argument otherwise.
  explicit histogram(std::vector<double> bounds);

  // The bounds for latencies in seconds: 5 ms to 10 minutes (a cold prefill of a long
  // conversation on a CPU takes minutes).
  static const std::vector<double>& latency_bounds();

  void observe(double v);

  long count() const { return count_; }
  double sum() const { return sum_; }
  // Observations at or below bounds()[i] (cumulative, as the text format writes them).
  long at_or_below(std::size_t i) const;
  const std::vector<double>& bounds() const { return bounds_; }

  // The series of one histogram: name_bucket{labels,le="b"} for every bound and for +Inf, then
  // name_sum{labels} and name_count{labels}. `labels` is empty or `key="value",...` with no braces.
  void write(std::ostream& o, const std::string& name, const std::string& labels = "") const;

 private:
  std::vector<double> bounds_;
  std::vector<long> in_bucket_;  // per bound, not cumulative; observations above the last bound: count_ - sum
  long count_ = 0;
  double sum_ = 0;
};

}  // namespace anchorage
