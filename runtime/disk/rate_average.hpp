#pragma once
// The disk tier's measured rates (read bandwidth, prefill tokens/s): an exponential average
// that takes its first sample whole.
namespace anchorage {

inline double blend_rate(double old, double sample) { return old == 0 ? sample : 0.7 * old + 0.3 * sample; }

}  // namespace anchorage
