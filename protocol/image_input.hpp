#pragma once
// An image as a request carries it once its bytes are decoded (runtime/image/image_decode.hpp):
// 8-bit RGB, row-major, alpha already composited. Plain data: the API layer fills it, the
// processor (runtime/image/image_preprocess.hpp) turns it into the encoder's patches.
#include <cstdint>
#include <vector>

namespace anchorage {

struct rgb_image {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::vector<std::uint8_t> rgb;  // width * height * 3 bytes: R, G, B per pixel, rows top to bottom
};

}  // namespace anchorage
