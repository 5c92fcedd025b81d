#pragma once
// A request's images encoded off the board's thread (docs/IMAGES.md, "The board"): the tower plans
// the job (vision_tower::plan_encode: the images its cache does not hold, each digest once), the
// vision encoder actor executes it with the tower's weights (execute_vision_encode), and the tower
// takes the rows into its cache (vision_tower::take_encoded) while the run keeps them for its own
// prompt (a cache too small to keep them must not send the run back to the encoder).
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "protocol/prompt_image.hpp"
#include "protocol/vision_messages.hpp"
#include "runtime/vision/vision_weights.hpp"

namespace anchorage {

// Image rows by digest (lo, hi): what a run encoded for its prompt.
using encoded_rows =
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::shared_ptr<const std::vector<float>>>;

struct vision_encode {
  // The plan.
  std::shared_ptr<const vision_weights> weights;
  std::vector<prompt_image> images;  // each digest once (the patches shared, not copied)
  // The outcome (execute_vision_encode).
  std::vector<std::shared_ptr<const std::vector<float>>> rows;  // per image: set for those encoded
  std::vector<double> encode_ms;                                // per image encoded
  std::string failure;  // what failed, naming the image; empty: every image encoded

  // The rows encoded, by digest.
  encoded_rows by_digest() const;
};

// Throws std::invalid_argument when `image` cannot go through an encoder of `c`: a merge size
// other than the tower's, or patches missing or not patch_values() floats a patch.
void check_vision_image(const vision_config& c, const prompt_image& image);

// One image's rows and the milliseconds its encode took.
struct timed_rows {
  std::shared_ptr<const std::vector<float>> rows;
  double ms = 0;
};

// `image` checked against `c` (check_vision_image), then encoded by `encode(patches, grid_t,
// grid_h, grid_w)` (the CPU's encode_image or the device's encoder) and timed: the one encode
// of an image, whoever runs it (the tower in place, the vision encoder actor off the board).
template <class Encode>
timed_rows encode_checked(const vision_config& c, const prompt_image& image, Encode&& encode) {
  check_vision_image(c, image);
  const auto t0 = std::chrono::steady_clock::now();
  timed_rows out;
  out.rows = std::make_shared<const std::vector<float>>(
      encode(image.patches->data(), image.grid_t, image.grid_h, image.grid_w));
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// Encodes the job's images in order on the CPU (encode_image), stopping at the first that fails
// (`failure` then names it, and the rows end before it). Touches nothing but the job and the
// weights (read only): thread-safe as far as OpenBLAS is.
void execute_vision_encode(vision_encode& job);

}  // namespace anchorage
