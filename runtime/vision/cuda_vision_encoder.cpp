// cuda_vision_encoder's sizes, and the class without CUDA (every constructor throws); the forward
// itself is runtime/vision/cuda/cuda_vision_encoder.cu, built only with ANCHORAGE_HAVE_CUDA.
#include "runtime/vision/cuda_vision_encoder.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/vision/vision_positions.hpp"

namespace anchorage {
namespace {

constexpr long score_floats = 16L << 20;  // one attention score tile, at most

}  // namespace

int cuda_vision_encoder::attention_query_tile(int per_frame) {
  if (per_frame <= 0) return 1;
  return static_cast<int>(std::clamp(score_floats / per_frame, 1L, static_cast<long>(per_frame)));
}

std::size_t cuda_vision_encoder::workspace_bytes(const vision_config& c, int grid_t, int grid_h, int grid_w) {
  using z = std::size_t;
  const z per_frame = static_cast<z>(grid_h) * static_cast<z>(grid_w), n = static_cast<z>(grid_t) * per_frame;
  const z h = static_cast<z>(c.hidden_size), inter = static_cast<z>(c.intermediate_size);
  const z tokens = n / static_cast<z>(c.merge_unit());
  const z tile = static_cast<z>(attention_query_tile(static_cast<int>(per_frame)));
  const z floats = n * static_cast<z>(c.patch_values())          // the patches
                   + n * (6 * h + inter)                         // residual, normed, qkv, attended; MLP
                   + tile * per_frame                            // one score tile
                   + tokens * static_cast<z>(c.out_hidden_size)  // the output
                   + per_frame * static_cast<z>(c.head_dim());   // rotary cos and sin
  return floats * sizeof(float) + per_frame * sizeof(position_taps);
}

#ifndef ANCHORAGE_HAVE_CUDA

struct cuda_vision_encoder::device_weights {};

cuda_vision_encoder::cuda_vision_encoder(const vision_weights& weights) : config_(weights.config) {
  throw std::invalid_argument(
      "the vision encoder on cuda needs the CUDA kernels, and this build has none (configure with "
      "-DANCHORAGE_CUDA=ON where nvcc is installed)");
}

cuda_vision_encoder::~cuda_vision_encoder() = default;

std::vector<float> cuda_vision_encoder::encode(const float*, int, int, int) const {
  throw std::logic_error("cuda_vision_encoder::encode without CUDA (no instance can exist)");
}

#endif

}  // namespace anchorage
