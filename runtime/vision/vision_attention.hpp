#pragma once
// The vision blocks' self-attention over one frame: bidirectional (every patch sees every patch of
// its frame and nothing else), multi-head, 2-D rotary on queries and keys, scale head_dim^-0.5.
#include <vector>

#include "runtime/vision/vision_positions.hpp"

namespace anchorage {

// `qkv` holds n rows of 3 * heads * head_dim floats, each [q | k | v] with heads contiguous inside
// each part (Hugging Face's qkv Linear output, reshaped (n, 3, heads, head_dim)); row p is the patch
// with rotary index p. Rotates q and k in place, then writes the attention output, n rows of
// heads * head_dim floats (heads contiguous, the input of proj), to `out`. `scratch` is resized as
// needed (scores for a tile of queries against all n keys); reuse it across calls to save
// allocations. Not thread-safe on the same buffers.
void vision_attention(float* qkv, int n, int heads, int head_dim, const vision_rotary& rotary, float* out,
                      std::vector<float>& scratch);

}  // namespace anchorage
