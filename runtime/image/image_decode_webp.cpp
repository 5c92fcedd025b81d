// WebP through libwebp's advanced decode API into the image's own buffer: RGB when the file has no
// alpha, else RGBA (not premultiplied) composited over white. libwebp's defaults (fancy
// upsampling, no dithering) are what Pillow's decoder uses. An animation is refused: the simple
// decoder cannot draw one, and its first frame would need libwebpdemux's canvas.
#include <webp/decode.h>

#include <vector>

#include "runtime/image/image_decode_formats.hpp"

namespace anchorage::image_detail {

namespace {

const char* status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "a bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "an unsupported feature";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "the data ends early";
    default:
      return "libwebp could not decode it";
  }
}

}  // namespace

expected<rgb_image> decode_webp(const std::uint8_t* data, std::size_t size, const image_limits& limits) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config))
    return status::failure("WebP: libwebp's version does not match its header");
  const VP8StatusCode header = WebPGetFeatures(data, size, &config.input);
  if (header != VP8_STATUS_OK) return truncated_or_corrupt(image_format::webp, status_text(header));
  if (config.input.has_animation) {
    return status::failure(
        "animated WebP is not supported: send a still image (PNG, JPEG, GIF or a still WebP)");
  }
  if (config.input.width < 0 || config.input.height < 0) {
    return truncated_or_corrupt(image_format::webp, "a negative size");
  }
  const auto width = static_cast<std::uint32_t>(config.input.width);
  const auto height = static_cast<std::uint32_t>(config.input.height);
  if (status s = check_image_size(image_format::webp, width, height, limits); !s) return s;

  rgb_image image = blank_image(width, height);
  const bool alpha = config.input.has_alpha != 0;
  std::vector<std::uint8_t> rgba(alpha ? image.rgb.size() / 3 * 4 : 0);
  config.output.colorspace = alpha ? MODE_RGBA : MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = alpha ? rgba.data() : image.rgb.data();
  config.output.u.RGBA.stride = static_cast<int>(width * (alpha ? 4 : 3));
  config.output.u.RGBA.size = alpha ? rgba.size() : image.rgb.size();
  const VP8StatusCode decoded = WebPDecode(data, size, &config);
  if (decoded != VP8_STATUS_OK) return truncated_or_corrupt(image_format::webp, status_text(decoded));
  if (alpha) {
    for (std::size_t p = 0, n = image.rgb.size() / 3; p < n; ++p) {
      const std::uint8_t* s = rgba.data() + 4 * p;
      std::uint8_t* d = image.rgb.data() + 3 * p;
      d[0] = over_white(s[0], s[3]);
      d[1] = over_white(s[1], s[3]);
      d[2] = over_white(s[2], s[3]);
    }
  }
  return image;
}

}  // namespace anchorage::image_detail
