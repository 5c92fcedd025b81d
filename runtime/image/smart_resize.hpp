#pragma once
// The size the Qwen3.5 processor resizes an image to: HF's `smart_resize` (transformers
// models/qwen2_vl/image_processing_qwen2_vl.py), with factor = patch_size * merge_size (32):
// 1. refuse an aspect ratio max(H, W) / min(H, W) above 200;
// 2. h = round(H / factor) * factor, w likewise, Python's round (half to even);
// 3. if h * w > max_pixels: beta = sqrt(H * W / max_pixels),
//    h = max(factor, floor(H / beta / factor) * factor), w likewise;
// 4. else if h * w < min_pixels: beta = sqrt(min_pixels / (H * W)),
//    h = ceil(H * beta / factor) * factor, w likewise.
// Every step is the same IEEE double operation, in the same order, as CPython's, so the result
// equals Python's for every size (H * W below 2^53 is exact in a double; larger is refused).
// Older transformers also refused H or W below factor; the current one, and this, do not.
#include <cstdint>

#include "runtime/core/status.hpp"
#include "runtime/image/image_processor_config.hpp"

namespace anchorage {

struct resized_size {
  std::int64_t height = 0;
  std::int64_t width = 0;
};

// Fails (a message, no exception) for a zero side, an aspect ratio above 200, or H * W >= 2^53.
// Requires a cfg that check_image_processor_config accepts.
expected<resized_size> smart_resize(std::int64_t height, std::int64_t width,
                                    const image_processor_config& cfg);

}  // namespace anchorage
