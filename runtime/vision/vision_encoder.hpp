#pragma once
// The Qwen3.5 vision encoder's forward on the CPU, in float32, as Hugging Face transformers'
// Qwen3_5VisionModel.forward computes it (its pooler_output):
//   1. patch embed: the Conv3d (kernel = stride = [temporal_patch, patch, patch]) as a linear
//      layer over each patch row of patch_values() floats, plus bias;
//   2. plus the learned position table resampled bilinearly (align_corners) to grid_h x grid_w,
//      the same for every frame;
//   3. depth pre-norm blocks: x += proj(attention(LN1(x))), x += fc2(act(fc1(LN2(x)))), the
//      attention bidirectional within each frame, with 2-D (row, col) rotary on q and k;
//   4. the merger: LayerNorm per patch, each merge x merge block of consecutive patches
//      concatenated, fc1, the exact erf GELU, fc2.
// vision_positions.hpp and vision_attention.hpp give the details.
#include <vector>

#include "runtime/vision/vision_weights.hpp"

namespace anchorage {

// Encodes one image (grid_t = 1) or video (grid_t frames). `patches` holds grid_t * grid_h * grid_w
// rows of w.config.patch_values() floats, as the processor lays them out: rows in
// (t, block_row, block_col, in_row, in_col) order with each merge x merge block contiguous, values
// in (channel, temporal, y, x) order. Returns grid_t * grid_h * grid_w / merge^2 rows of
// out_hidden_size floats, row-major: one language-model embedding per merged block, frame by frame,
// blocks in raster order over the (grid_h / merge) x (grid_w / merge) merged grid.
// Throws std::invalid_argument when a grid dimension is below 1 or grid_h or grid_w is not a
// multiple of spatial_merge_size. Keeps no state between calls; thread-safe (OpenBLAS permitting).
std::vector<float> encode_image(const vision_weights& w, const float* patches, int grid_t, int grid_h,
                                int grid_w);

// The grid check encode_image (and the CUDA encoder, cuda_vision_encoder.hpp) starts with: throws
// std::invalid_argument naming the grid unless every dimension is at least 1 and grid_h and grid_w
// are multiples of c.spatial_merge_size.
void check_vision_grid(const vision_config& c, int grid_t, int grid_h, int grid_w);

}  // namespace anchorage
