#pragma once
// The Qwen3.5 image processor's settings (Hugging Face `Qwen2VLImageProcessor`, used through the
// Qwen3-VL processor) and how they are read from a model's `preprocessor_config.json`. The
// defaults are the Qwen3-VL family's published values (patch 16, merge 2, temporal 2,
// shortest_edge 65536, longest_edge 16777216, mean = std = 0.5), not the HF class defaults
// (patch 14 and the OpenAI-CLIP constants): a key absent from the file keeps its default here.
#include <cstdint>
#include <string_view>

#include "runtime/core/status.hpp"

namespace anchorage {

struct image_processor_config {
  int patch_size = 16;                 // pixels per patch side
  int merge_size = 2;                  // patches per merged (LLM) row, per side
  int temporal_patch_size = 2;         // frames per patch; a still image is repeated to this many
  std::int64_t min_pixels = 65536;     // size.shortest_edge: smart_resize's lower pixel bound
  std::int64_t max_pixels = 16777216;  // size.longest_edge: its upper pixel bound
  float mean[3] = {0.5f, 0.5f, 0.5f};  // image_mean, per channel R, G, B
  float std[3] = {0.5f, 0.5f, 0.5f};   // image_std, per channel

  // smart_resize's rounding unit: the side in pixels of one merged row's square.
  int factor() const { return patch_size * merge_size; }
};

// Ok when `cfg` makes sense: sizes in range (patch 1..256, merge 1..16, temporal 1..16),
// max_pixels at most 2^28, mean finite, std finite and positive, and pixel bounds that give
// every image at least image_key_rows (runtime/image/image_rows.hpp) merged rows:
// min_pixels >= image_key_rows * factor^2 (smart_resize's round and min branches never go below
// min_pixels) and max_pixels >= max(min_pixels, 4 * image_key_rows * factor^2) (its max branch
// floors both sides, which loses at most half of each, so it keeps >= a quarter of max_pixels).
// A failure says which key and why.
status check_image_processor_config(const image_processor_config& cfg);

// Reads the keys of a Hugging Face `preprocessor_config.json` (the whole file's text):
// `size.shortest_edge` / `size.longest_edge`, then top-level `min_pixels` / `max_pixels`, which
// override them as HF's constructor does; `image_mean`, `image_std` (3 numbers or one for all);
// `patch_size`, `merge_size`, `temporal_patch_size`. Keys the processor here cannot honour are
// refused rather than ignored: `do_resize`, `do_rescale`, `do_normalize` false, a
// `rescale_factor` other than 1/255, a `resample` other than 3 (bicubic). Other keys are ignored.
// Fails on JSON that does not parse, a wrong type, or a config check_image_processor_config
// refuses.
expected<image_processor_config> image_processor_config_from_json(std::string_view text);

}  // namespace anchorage
