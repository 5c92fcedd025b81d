#pragma once
// Fixed-seed inputs for the kernel tests run on the CPU (the CUDA parity tests have their own,
// tests/support/cuda_parity.hpp).
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace anchorage::testing {

// n floats uniform in [lo, hi) from mt19937_64 seeded with `seed`: the same for the same arguments.
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace anchorage::testing
