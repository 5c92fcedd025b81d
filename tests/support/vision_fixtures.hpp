#pragma once
// Random inputs for the vision encoder's tests: patch values as the processor's normalisation
// leaves them and towers with random weights, the same for the same seed.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/vision/vision_config.hpp"
#include "runtime/vision/vision_weights.hpp"

namespace anchorage::testing {

// grid_t * grid_h * grid_w patches of c.patch_values() values uniform in [-1, 1) (the
// processor's range after its mean/std 0.5 normalisation).
inline std::vector<float> random_patches(const vision_config& c, int grid_t, int grid_h, int grid_w,
                                         std::uint64_t seed) {
  std::vector<float> p(static_cast<std::size_t>(grid_t) * static_cast<std::size_t>(grid_h) *
                       static_cast<std::size_t>(grid_w) * static_cast<std::size_t>(c.patch_values()));
  std::uint64_t x = seed;
  for (float& v : p) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<float>(static_cast<double>(x >> 40) * (2.0 / 16777216.0) - 1.0);
  }
  return p;
}

// A tower of `c` with random_vision_weights(c, seed).
inline vision_weights random_tower_weights(const vision_config& c, std::uint64_t seed) {
  return load_vision_weights(c, random_vision_weights(c, seed), "random");
}

}  // namespace anchorage::testing
