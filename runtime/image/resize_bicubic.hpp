#pragma once
// The Qwen3.5 processor's resize: Pillow's `Image.resize((w, h), Image.BICUBIC)` on an 8-bit RGB
// image, bit for bit (Pillow's src/libImaging/Resample.c, its 8-bit path; the tests hold it to
// Pillow 9.4). This is what HF's slow processor runs (transformers image_transforms.resize hands
// the uint8 image to PIL). HF's fast processor resizes with torchvision's antialiased uint8
// bicubic instead, which was written to approximate Pillow and may differ from it by one level.
//
// What Pillow does, and so this:
// - Separable: a horizontal pass first, into the rows the vertical pass will read, then the
//   vertical pass. A side whose size does not change skips its pass (the image is copied when
//   neither changes).
// - Per output index i along a side of in -> out: scale = in / out, filterscale = max(scale, 1)
//   (antialiasing: a downscale widens the filter), support = 2 * filterscale, centre =
//   (i + 0.5) * scale, taps j in [int(centre - support + 0.5), int(centre + support + 0.5))
//   clipped to the image, weight of tap j = cubic((j - centre + 0.5) / filterscale) with the
//   Keys cubic at a = -0.5, weights divided by their sum (all in double).
// - 8-bit fixed point: each weight becomes int(w * 2^22 +- 0.5) (rounded half away from zero);
//   a pass sums pixel * weight in int32 from 2^21 (a half, for rounding), shifts right by 22
//   and clamps to 0..255.
#include <cstdint>

#include "protocol/image_input.hpp"

namespace anchorage {

// `in` resized to out_width x out_height. Requires (asserted) positive sizes and
// in.rgb.size() == in.width * in.height * 3.
rgb_image resize_bicubic(const rgb_image& in, std::uint32_t out_height, std::uint32_t out_width);

}  // namespace anchorage
