#pragma once
// The vision encoder's input for one image, as HF's `Qwen2VLImageProcessor._preprocess` lays out
// `pixel_values` (transformers models/qwen2_vl/image_processing_qwen2_vl.py), and the step that
// makes it from an image already resized to multiples of patch_size * merge_size.
//
// LAYOUT. grid_t * grid_h * grid_w rows of row_values() = channels * temporal_patch_size *
// patch_size^2 values (3 * 2 * 16 * 16 = 1536 for Qwen3.5):
// - rows in (t, block_row, block_col, in_row, in_col) order: the merge_size^2 patches of one
//   merged row (one LLM token) are contiguous, merged rows in raster order over the
//   (grid_h / merge) x (grid_w / merge) grid;
// - values within a row in (channel, frame, y, x) order.
// A still image is one frame repeated to temporal_patch_size frames, so grid_t = 1.
//
// VALUES. (x * (1/255) - mean[c]) / std[c] as HF's slow processor computes it: the 8-bit value
// times the double 1/255, rounded to float32 (image_transforms.rescale: float64 product, cast to
// float32), then minus float32 mean, divided by float32 std, in float32 (image_transforms.
// normalize). HF's fast processor fuses the two ((x - 255 mean) / (255 std) in float32) and may
// differ by an ulp.
#include <cstddef>
#include <vector>

#include "protocol/image_input.hpp"
#include "runtime/image/image_processor_config.hpp"

namespace anchorage {

struct image_patches {
  int grid_t = 0;  // frame pairs: 1 for an image
  int grid_h = 0;  // patches down: resized height / patch_size
  int grid_w = 0;  // patches across: resized width / patch_size
  int channels = 3;
  int temporal_patch_size = 2;
  int patch_size = 16;
  int merge_size = 2;
  std::vector<float> values;  // patch_rows() * row_values(), in the order above

  std::size_t patch_rows() const {
    return static_cast<std::size_t>(grid_t) * static_cast<std::size_t>(grid_h) *
           static_cast<std::size_t>(grid_w);
  }
  std::size_t row_values() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(temporal_patch_size) *
           static_cast<std::size_t>(patch_size) * static_cast<std::size_t>(patch_size);
  }
  // The LLM rows the image takes in a prompt: grid_t * grid_h * grid_w / merge_size^2.
  std::size_t merged_rows() const {
    return patch_rows() / (static_cast<std::size_t>(merge_size) * static_cast<std::size_t>(merge_size));
  }
};

// Normalises `resized` and lays it out in patches. Requires (asserted) a valid cfg and an image
// whose sides are positive multiples of cfg.factor(), as smart_resize makes them.
image_patches patches_of(const rgb_image& resized, const image_processor_config& cfg);

}  // namespace anchorage
