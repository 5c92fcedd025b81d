#include "runtime/image/smart_resize.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace anchorage {

expected<resized_size> smart_resize(std::int64_t height, std::int64_t width,
                                    const image_processor_config& cfg) {
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  if (height <= 0 || width <= 0) return status::failure("image " + size + ": a side is zero");
  constexpr std::int64_t exact_limit = std::int64_t{1} << 53;
  if (height > exact_limit / width) return status::failure("image " + size + ": too many pixels");
  const double h = static_cast<double>(height);
  const double w = static_cast<double>(width);
  // max(height, width) / min(height, width) > 200: Python's int / int is the correctly rounded
  // quotient, as the double division of two exactly represented integers is.
  if (std::max(h, w) / std::min(h, w) > 200.0) {
    return status::failure("image " + size + ": aspect ratio above 200");
  }
  const double factor = cfg.factor();
  const auto f = static_cast<std::int64_t>(cfg.factor());
  // round(x): std::nearbyint in the default rounding mode (to nearest, ties to even).
  std::int64_t h_bar = static_cast<std::int64_t>(std::nearbyint(h / factor)) * f;
  std::int64_t w_bar = static_cast<std::int64_t>(std::nearbyint(w / factor)) * f;
  const double pixels = static_cast<double>(height * width);
  if (h_bar * w_bar > cfg.max_pixels) {
    const double beta = std::sqrt(pixels / static_cast<double>(cfg.max_pixels));
    h_bar = std::max(f, static_cast<std::int64_t>(std::floor(h / beta / factor)) * f);
    w_bar = std::max(f, static_cast<std::int64_t>(std::floor(w / beta / factor)) * f);
  } else if (h_bar * w_bar < cfg.min_pixels) {
    const double beta = std::sqrt(static_cast<double>(cfg.min_pixels) / pixels);
    h_bar = static_cast<std::int64_t>(std::ceil(h * beta / factor)) * f;
    w_bar = static_cast<std::int64_t>(std::ceil(w * beta / factor)) * f;
  }
  return resized_size{h_bar, w_bar};
}

}  // namespace anchorage
