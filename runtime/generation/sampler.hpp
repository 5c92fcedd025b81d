#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

struct sampling_params {
  float temperature = 0.0f;  // 0: greedy
  float top_p = 1.0f;        // nucleus mass in (0, 1]
  std::uint64_t seed = 0;
  // OpenAI logit_bias: (id, bias) added to the id's logit before the greedy argmax and before
  // the softmax; ids must be in [0, logits.size()), an id listed twice gets both biases.
  std::vector<std::pair<token_id, float>> logit_bias;
  // The ids that may be chosen: (*allowed)[id] for id < allowed->size(), never an id at or past
  // its end (the tokenizer's defined ids, tokenizer::defined_mask(), against a model whose vocab
  // is larger or has holes). Null: every id of the logits.
  std::shared_ptr<const std::vector<bool>> allowed;
};

// The uniform draw of step `step` of a generation with `seed`: a pure function of the two, so a
// generation stopped at step k continues from (state, seed, k) with the same draws.
double step_uniform(std::uint64_t seed, std::uint64_t step);

// Picks the token of step `step` from `logits` (plus p.logit_bias, applied to a copy: `logits`
// is never modified). Greedy (temperature 0): the largest logit,
// the lowest id among ties. Otherwise softmax(logits / temperature) in double precision,
// restricted to the smallest set of most likely tokens (ties by lower id) whose mass reaches
// top_p, and the draw step_uniform(seed, step) walks that set in order.
// Ids p.allowed excludes are never chosen, at any temperature: they are left out before the
// argmax and before the softmax.
// Throws std::invalid_argument for a negative temperature, a top_p outside (0, 1], a biased id
// outside the logits, or a mask that allows none of the logits' ids.
token_id sample_token(const std::vector<float>& logits, const sampling_params& p, std::uint64_t step);

}  // namespace anchorage
