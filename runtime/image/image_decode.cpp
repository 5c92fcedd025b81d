#include "runtime/image/image_decode.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/image/image_decode_formats.hpp"

namespace anchorage {

const char* image_format_name(image_format format) {
  switch (format) {
    case image_format::png:
      return "PNG";
    case image_format::jpeg:
      return "JPEG";
    case image_format::gif:
      return "GIF";
    case image_format::webp:
      return "WebP";
  }
  return "image";
}

std::optional<image_format> sniff_image_format(const std::uint8_t* data, std::size_t size) {
  const auto starts_with = [&](std::size_t at, const char* magic, std::size_t n) {
    return size >= at + n && std::memcmp(data + at, magic, n) == 0;
  };
  if (starts_with(0, "\x89PNG\r\n\x1a\n", 8)) return image_format::png;
  if (starts_with(0, "\xff\xd8\xff", 3)) return image_format::jpeg;
  if (starts_with(0, "GIF87a", 6) || starts_with(0, "GIF89a", 6)) return image_format::gif;
  if (starts_with(0, "RIFF", 4) && starts_with(8, "WEBP", 4)) return image_format::webp;
  return std::nullopt;
}

status check_image_size(image_format format, std::uint64_t width, std::uint64_t height,
                        const image_limits& limits) {
  const std::string declared = std::string(image_format_name(format)) + " image declares " +
                               std::to_string(width) + " x " + std::to_string(height) + " pixels";
  if (width == 0 || height == 0) return status::failure(declared + ": an image needs a width and a height");
  // Both sides are below 2^32 for every format, so the product fits 64 bits.
  if (width * height > limits.max_pixels) {
    return status::failure(declared + ", more than the limit of " + std::to_string(limits.max_pixels));
  }
  if (std::max(width, height) > limits.max_side) {
    return status::failure(declared + ", a side over the limit of " + std::to_string(limits.max_side));
  }
  const double aspect =
      static_cast<double>(std::max(width, height)) / static_cast<double>(std::min(width, height));
  if (aspect > limits.max_aspect) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ", an aspect ratio of %g:1, over the limit of %g:1", aspect,
                  limits.max_aspect);
    return status::failure(declared + buf);
  }
  return status::ok();
}

expected<rgb_image> decode_image(const std::uint8_t* data, std::size_t size, const image_limits& limits) {
  if (size > limits.max_bytes) {
    return status::failure("the image is " + std::to_string(size) + " bytes, more than the limit of " +
                           std::to_string(limits.max_bytes));
  }
  const auto format = sniff_image_format(data, size);
  if (!format) {
    return status::failure(size == 0 ? "the image is empty: not a PNG, JPEG, GIF or WebP image"
                                     : "not a PNG, JPEG, GIF or WebP image");
  }
  switch (*format) {
    case image_format::png:
      return image_detail::decode_png(data, size, limits);
    case image_format::jpeg:
      return image_detail::decode_jpeg(data, size, limits);
    case image_format::gif:
      return image_detail::decode_gif(data, size, limits);
    case image_format::webp:
      return image_detail::decode_webp(data, size, limits);
  }
  return status::failure("not a PNG, JPEG, GIF or WebP image");
}

namespace image_detail {

status truncated_or_corrupt(image_format format, const std::string& detail) {
  return status::failure(std::string("truncated or corrupt ") + image_format_name(format) + ": " + detail);
}

rgb_image blank_image(std::uint32_t width, std::uint32_t height) {
  rgb_image image;
  image.width = width;
  image.height = height;
  image.rgb.assign(static_cast<std::size_t>(width) * height * 3, 0);
  return image;
}

}  // namespace image_detail

}  // namespace anchorage
