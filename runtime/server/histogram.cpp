#include "runtime/server/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace anchorage {

histogram::histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), in_bucket_(bounds_.size(), 0) {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i])) throw std::invalid_argument("histogram: a bound is not finite");
    if (i > 0 && !(bounds_[i - 1] < bounds_[i])) throw std::invalid_argument("histogram: bounds must ascend");
  }
}

const std::vector<double>& histogram::latency_bounds() {
  static const std::vector<double> b = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                        2.5,   5,    10,    30,   60,  120,  300, 600};
  return b;
}

void histogram::observe(double v) {
  // A bound is inclusive (le): the first bound at or above v.
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
  if (it != bounds_.end()) ++in_bucket_[static_cast<std::size_t>(it - bounds_.begin())];
  ++count_;
  sum_ += v;
}

long histogram::at_or_below(std::size_t i) const {
  long n = 0;
  for (std::size_t j = 0; j <= i && j < in_bucket_.size(); ++j) n += in_bucket_[j];
  return n;
}

void histogram::write(std::ostream& o, const std::string& name, const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  long cumulative = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += in_bucket_[i];
    std::ostringstream le;
    le << bounds_[i];
    o << name << "_bucket{" << labels << sep << "le=\"" << le.str() << "\"} " << cumulative << "\n";
  }
  o << name << "_bucket{" << labels << sep << "le=\"+Inf\"} " << count_ << "\n";
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  o << name << "_sum" << braces << " " << sum_ << "\n" << name << "_count" << braces << " " << count_ << "\n";
}

}  // namespace anchorage
