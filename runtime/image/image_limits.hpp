#pragma once
// The bounds an image in a request must keep (issue 27), checked on what a file declares before
// any pixel is decoded or any pixel buffer allocated: the bytes sent, the pixels, the longest side
// and the aspect ratio. Plain data; decode_image (runtime/image/image_decode.hpp) applies them.
#include <cstddef>
#include <cstdint>

namespace anchorage {

struct image_limits {
  // The image file's bytes (after base64 decoding): 20 MiB.
  std::size_t max_bytes = std::size_t{20} << 20;
  // width * height: 32 MP. The decoder's pixel buffers grow with it (3 bytes a pixel out, up to 8
  // a pixel while a 16-bit interlaced PNG or a progressive JPEG is read).
  std::uint64_t max_pixels = std::uint64_t{1} << 25;
  // The longest side, in pixels.
  std::uint32_t max_side = 16384;
  // max(width, height) / min(width, height): the Qwen processor refuses a ratio over 200
  // (smart_resize's "absolute aspect ratio must be smaller than 200"), so 200:1 passes and 201:1
  // does not.
  double max_aspect = 200;
};

}  // namespace anchorage
