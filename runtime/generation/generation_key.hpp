#pragma once
#include <cstdint>

#include "protocol/board_job.hpp"

namespace anchorage {

// The identity of a generation for its durable checkpoints (docs/DISK_TIER.md, "Generation
// checkpoints"): two requests with this key produce the same tokens. XXH3-64 over the route,
// the prompt ids and every field that changes what is sampled or where it stops (temperature,
// top_p, max_tokens, stop tokens and strings, logit_bias, what is parsed, the reasoning budget)
// and the seed when the client sent it. A server-chosen seed is left out: the checkpoint keeps
// the seed actually used, and the resumed generation continues with it.
std::uint64_t generation_key(const board_job& j);

}  // namespace anchorage
