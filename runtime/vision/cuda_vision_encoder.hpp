#pragma once
// The vision encoder's forward (vision_encoder.hpp) on a CUDA device: the same ops in the same
// order, in float32, the linears through cuBLAS sgemm (kernels::cuda::gemm: pedantic math, so no
// TF32) and the rest through runtime/vision/cuda/*.cu (vision_ops.hpp). Its output equals
// encode_image's to about 1e-6 of the output's scale, not bit for bit (cuBLAS sums in another
// order than OpenBLAS; tests/vision/test_vision_cuda.cpp states the tolerance).
//
// The weights are copied to the device once, at construction, into one allocation (about
// 4 bytes a parameter: 1.8 GB for Qwen3.5's 27-block tower); each encode() allocates its
// activations from the device's stream-ordered pool (workspace_bytes) and frees them before it
// returns.
#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/vision/vision_weights.hpp"

namespace anchorage {

class cuda_vision_encoder {
 public:
  // Copies `weights` to the current CUDA device; keeps no reference to them. Throws
  // std::invalid_argument when this build has no CUDA kernels (ANCHORAGE_HAVE_CUDA unset) or no
  // device is present, std::runtime_error naming the CUDA call when an allocation or copy fails
  // (out of device memory, say).
  explicit cuda_vision_encoder(const vision_weights& weights);
  ~cuda_vision_encoder();
  cuda_vision_encoder(const cuda_vision_encoder&) = delete;
  cuda_vision_encoder& operator=(const cuda_vision_encoder&) = delete;

  const vision_config& config() const { return config_; }

  // encode_image's contract: `patches` (host memory) holds grid_t * grid_h * grid_w rows of
  // patch_values() floats; returns grid_t * grid_h * grid_w / merge^2 rows of out_hidden_size
  // floats in host memory, once the device is done. Throws std::invalid_argument for a grid
  // check_vision_grid refuses, std::runtime_error when a CUDA call fails (out of device memory
  // for the workspace). The same inputs give the same bits, call after call. Uses the default
  // stream and the kernels' shared cuBLAS handle: one caller at a time.
  std::vector<float> encode(const float* patches, int grid_t, int grid_h, int grid_w) const;

  // Device bytes the weights hold.
  std::size_t weight_bytes() const { return weight_bytes_; }
  // Device bytes one encode() of this grid allocates: the patches, five activation buffers
  // (residual, normed, qkv, attention output, MLP; per patch 6 hidden + intermediate floats), a
  // score tile of attention_query_tile(per frame) x per-frame floats, the output, and the taps
  // and rotary tables. About 55 KB a patch for Qwen3.5 plus the score tile (at most 64 MiB).
  static std::size_t workspace_bytes(const vision_config& c, int grid_t, int grid_h, int grid_w);
  // Queries per attention score tile for a frame of `per_frame` patches: the whole frame while
  // its scores fit in 16 Mi floats (64 MiB; up to 4,096 patches, a 1024 x 1024 image), fewer beyond.
  static int attention_query_tile(int per_frame);

 private:
  struct device_weights;
  vision_config config_;
  std::unique_ptr<device_weights> device_;
  std::size_t weight_bytes_ = 0;
};

}  // namespace anchorage
