#pragma once
// Inside decode_image (runtime/image/image_decode.hpp): one decoder per format, each given bytes
// whose magic bytes already name it and at most limits.max_bytes of them, and the pixel rules the
// four share. Not for use outside runtime/image.
#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/image_input.hpp"
#include "runtime/core/status.hpp"
#include "runtime/image/image_decode.hpp"
#include "runtime/image/image_limits.hpp"

namespace anchorage::image_detail {

expected<rgb_image> decode_png(const std::uint8_t* data, std::size_t size, const image_limits& limits);
expected<rgb_image> decode_jpeg(const std::uint8_t* data, std::size_t size, const image_limits& limits);
expected<rgb_image> decode_gif(const std::uint8_t* data, std::size_t size, const image_limits& limits);
expected<rgb_image> decode_webp(const std::uint8_t* data, std::size_t size, const image_limits& limits);

// "truncated or corrupt PNG: <detail>".
status truncated_or_corrupt(image_format format, const std::string& detail);

// An image of width x height with its pixel buffer allocated (3 bytes a pixel, zero). Only after
// check_image_size passed for that size.
rgb_image blank_image(std::uint32_t width, std::uint32_t height);

// One channel of a pixel of `alpha` alpha-composited over opaque white, as Pillow's
// Image.alpha_composite(white, pixel) rounds it: with an opaque destination its fixed-point
// arithmetic reduces to round((c * a + 255 * (255 - a)) / 255), exactly (every (c, a) pair is
// checked against Pillow in tests/image/test_image_decode.cpp). 255 when alpha is 0, c when 255.
inline std::uint8_t over_white(std::uint32_t c, std::uint32_t alpha) {
  const std::uint32_t v = c * alpha + 255 * (255 - alpha) + 128;
  return static_cast<std::uint8_t>((v + (v >> 8)) >> 8);
}

}  // namespace anchorage::image_detail
