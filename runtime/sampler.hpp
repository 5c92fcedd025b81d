#pragma once
#include <cstdint>
#include <vector>

#include "runtime/token.hpp"

namespace anchorage {

struct sampling_params {
  float temperature = 0.0f;  // 0: greedy
  float top_p = 1.0f;        // nucleus mass in (0, 1]
  std::uint64_t seed = 0;
};

// The uniform draw of step `step` of a generation with `seed`: a pure function of the two, so a
// generation stopped at step k continues from (state, seed, k) with the same draws.
double step_uniform(std::uint64_t seed, std::uint64_t step);

// Picks the token of step `step` from `logits`. Greedy (temperature 0): the largest logit,
// the lowest id among ties. Otherwise softmax(logits / temperature) in double precision,
// restricted to the smallest set of most likely tokens (ties by lower id) whose mass reaches
// top_p, and the draw step_uniform(seed, step) walks that set in order.
// Throws std::invalid_argument for a negative temperature or a top_p outside (0, 1].
token_id sample_token(const std::vector<float>& logits, const sampling_params& p, std::uint64_t step);

}  // namespace anchorage
