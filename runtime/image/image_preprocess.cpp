#include "runtime/image/image_preprocess.hpp"

#include <cstddef>
#include <limits>
#include <string>

#include "runtime/image/image_rows.hpp"
#include "runtime/image/resize_bicubic.hpp"
#include "runtime/image/smart_resize.hpp"

namespace anchorage {

expected<image_patches> preprocess(const rgb_image& image, const image_processor_config& cfg) {
  if (auto s = check_image_processor_config(cfg); !s) return s;
  if (image.rgb.size() != std::size_t{image.width} * image.height * 3) {
    return status::failure("image " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                           ": " + std::to_string(image.rgb.size()) + " bytes of RGB, not width * height * 3");
  }
  auto size = smart_resize(image.height, image.width, cfg);
  if (!size) return size.error();
  constexpr std::int64_t side_limit = std::numeric_limits<int>::max();
  if (size->height > side_limit || size->width > side_limit) {
    return status::failure("image " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                           ": resized sides out of range");
  }
  const auto height = static_cast<std::uint32_t>(size->height);
  const auto width = static_cast<std::uint32_t>(size->width);
  image_patches patches = (height == image.height && width == image.width)
                              ? patches_of(image, cfg)
                              : patches_of(resize_bicubic(image, height, width), cfg);
  // The config check guarantees this; the rows' injectivity depends on it.
  if (patches.merged_rows() < image_key_rows) {
    return status::failure("image " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                           ": fewer than " + std::to_string(image_key_rows) + " merged rows");
  }
  return patches;
}

}  // namespace anchorage
