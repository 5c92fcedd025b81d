#include "runtime/vision/vision_encode.hpp"

#include <exception>
#include <stdexcept>

#include "runtime/vision/vision_encoder.hpp"

namespace anchorage {

encoded_rows vision_encode::by_digest() const {
  encoded_rows out;
  for (std::size_t i = 0; i < rows.size() && i < images.size(); ++i)
    if (rows[i]) out[{images[i].digest_lo, images[i].digest_hi}] = rows[i];
  return out;
}

void check_vision_image(const vision_config& c, const prompt_image& image) {
  if (image.merge != c.spatial_merge_size)
    throw std::invalid_argument("an image merged " + std::to_string(image.merge) + " x " +
                                std::to_string(image.merge) + " for a tower that merges " +
                                std::to_string(c.spatial_merge_size));
  const std::size_t patch_rows = static_cast<std::size_t>(image.grid_t) * image.grid_h * image.grid_w;
  if (!image.patches || image.patches->size() != patch_rows * static_cast<std::size_t>(c.patch_values()))
    throw std::invalid_argument("an image's patches are missing or not " + std::to_string(c.patch_values()) +
                                " values a patch");
}

void execute_vision_encode(vision_encode& job) {
  job.rows.clear();
  job.encode_ms.clear();
  job.failure.clear();
  if (!job.weights) {
    job.failure = "no vision weights to encode with";
    return;
  }
  for (std::size_t i = 0; i < job.images.size(); ++i) {
    const prompt_image& image = job.images[i];
    try {
      timed_rows done =
          encode_checked(job.weights->config, image, [&](const float* patches, int t, int h, int w) {
            return encode_image(*job.weights, patches, t, h, w);
          });
      job.encode_ms.push_back(done.ms);
      job.rows.push_back(std::move(done.rows));
    } catch (const std::exception& e) {
      job.failure = "image " + std::to_string(i) + " of the request: " + e.what();
      return;
    }
  }
}

}  // namespace anchorage
