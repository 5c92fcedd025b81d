#pragma once
// What the benchmark tools share: comma-separated lists, a printable token stream, a stopwatch.
#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage::bench {

inline std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoi(item));
  return out;
}

// n printable bytes (xorshift); each seed its own stream, seed 0 the engine benchmark's.
inline std::vector<token_id> prose(std::size_t n, std::uint64_t seed = 0) {
  std::vector<token_id> t(n);
  std::uint64_t x = 88172645463325252ULL ^ (seed * 0x9e3779b97f4a7c15ULL);
  for (auto& v : t) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = static_cast<token_id>(32 + x % 95);
  }
  return t;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace anchorage::bench
