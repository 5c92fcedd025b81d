#pragma once
#include <chrono>
#include <cstdint>

namespace anchorage {

// Nanoseconds on the steady clock: request timings (TTFT, total) are differences of these.
inline std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace anchorage
