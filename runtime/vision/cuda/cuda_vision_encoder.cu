// cuda_vision_encoder: the weights uploaded into one device allocation, and encode_image's forward
// (vision_encoder.cpp) op for op on the device; see cuda_vision_encoder.hpp.
#include "runtime/vision/cuda_vision_encoder.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/device.hpp"
#include "runtime/vision/cuda/vision_ops.hpp"
#include "runtime/vision/vision_encoder.hpp"
#include "runtime/vision/vision_positions.hpp"

namespace anchorage {

struct cuda_vision_encoder::device_weights {
  struct block {
    const float *norm1_weight, *norm1_bias, *qkv_weight, *qkv_bias, *proj_weight, *proj_bias;
    const float *norm2_weight, *norm2_bias, *fc1_weight, *fc1_bias, *fc2_weight, *fc2_bias;
  };
  float* arena = nullptr;  // every tensor below lies in it
  const float *patch_weight = nullptr, *patch_bias = nullptr, *pos_embed = nullptr;
  std::vector<block> blocks;
  const float *merger_norm_weight = nullptr, *merger_norm_bias = nullptr;
  const float *merger_fc1_weight = nullptr, *merger_fc1_bias = nullptr;
  const float *merger_fc2_weight = nullptr, *merger_fc2_bias = nullptr;

  device_weights() = default;
  device_weights(const device_weights&) = delete;
  device_weights& operator=(const device_weights&) = delete;
  ~device_weights() {
    if (arena != nullptr && cudaFree(arena) != cudaSuccess) (void)cudaGetLastError();
  }
};

namespace {

// Each tensor starts on a 256-byte boundary of the arena (cuBLAS's preferred alignment).
constexpr std::size_t align_floats = 64;

std::size_t aligned(std::size_t floats) { return (floats + align_floats - 1) / align_floats * align_floats; }

// A host tensor and where its device copy's address goes.
struct placement {
  const std::vector<float>* host;
  const float** device;
};

// Device memory for one encode(), taken from the stream-ordered pool in one piece and handed out in
// aligned parts.
class workspace {
 public:
  explicit workspace(std::size_t bytes) : buffer_(bytes), size_(bytes) {}
  template <class T>
  T* take(std::size_t count) {
    T* p = reinterpret_cast<T*>(buffer_.as<char>() + used_);
    used_ += (count * sizeof(T) + 255) / 256 * 256;
    if (used_ > size_)
      throw std::logic_error("cuda_vision_encoder: workspace_bytes undercounts the workspace");
    return p;
  }

 private:
  kernels::cuda_impl::stream_buffer buffer_;
  std::size_t size_, used_ = 0;
};

template <class T>
void upload(T* device, const std::vector<T>& host) {
  CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
}

}  // namespace

cuda_vision_encoder::cuda_vision_encoder(const vision_weights& w)
    : config_(w.config), device_(std::make_unique<device_weights>()) {
  if (!kernels::cuda_available())
    throw std::invalid_argument("the vision encoder on cuda needs a CUDA device, and none is present");
  config_.validate();
  if (static_cast<int>(w.blocks.size()) != config_.depth)
    throw std::invalid_argument("cuda_vision_encoder: " + std::to_string(w.blocks.size()) +
                                " blocks of weights for a depth of " + std::to_string(config_.depth));
  device_weights& d = *device_;
  std::vector<placement> list = {
      {&w.patch_weight, &d.patch_weight}, {&w.patch_bias, &d.patch_bias}, {&w.pos_embed, &d.pos_embed}};
  d.blocks.resize(w.blocks.size());
  for (std::size_t i = 0; i < w.blocks.size(); ++i) {
    const vision_block_weights& b = w.blocks[i];
    device_weights::block& db = d.blocks[i];
    list.insert(list.end(), {{&b.norm1_weight, &db.norm1_weight},
                             {&b.norm1_bias, &db.norm1_bias},
                             {&b.qkv_weight, &db.qkv_weight},
                             {&b.qkv_bias, &db.qkv_bias},
                             {&b.proj_weight, &db.proj_weight},
                             {&b.proj_bias, &db.proj_bias},
                             {&b.norm2_weight, &db.norm2_weight},
                             {&b.norm2_bias, &db.norm2_bias},
                             {&b.fc1_weight, &db.fc1_weight},
                             {&b.fc1_bias, &db.fc1_bias},
                             {&b.fc2_weight, &db.fc2_weight},
                             {&b.fc2_bias, &db.fc2_bias}});
  }
  list.insert(list.end(), {{&w.merger_norm_weight, &d.merger_norm_weight},
                           {&w.merger_norm_bias, &d.merger_norm_bias},
                           {&w.merger_fc1_weight, &d.merger_fc1_weight},
                           {&w.merger_fc1_bias, &d.merger_fc1_bias},
                           {&w.merger_fc2_weight, &d.merger_fc2_weight},
                           {&w.merger_fc2_bias, &d.merger_fc2_bias}});
  std::size_t floats = 0;
  for (const placement& p : list) floats += aligned(p.host->size());
  weight_bytes_ = floats * sizeof(float);
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d.arena), weight_bytes_ == 0 ? 1 : weight_bytes_));
  std::size_t offset = 0;
  for (const placement& p : list) {
    float* at = d.arena + offset;
    upload(at, *p.host);
    *p.device = at;
    offset += aligned(p.host->size());
  }
}

cuda_vision_encoder::~cuda_vision_encoder() = default;

std::vector<float> cuda_vision_encoder::encode(const float* patches, int grid_t, int grid_h,
                                               int grid_w) const {
  const vision_config& c = config_;
  check_vision_grid(c, grid_t, grid_h, grid_w);
  const device_weights& d = *device_;
  const int per_frame = grid_h * grid_w, n = grid_t * per_frame, h = c.hidden_size,
            inter = c.intermediate_size;
  const std::size_t rows = static_cast<std::size_t>(n);
  const std::size_t patch_floats = rows * static_cast<std::size_t>(c.patch_values());

  // What the device needs from the host besides the patches: the frame's taps into the position
  // table and its rotary tables, computed by the CPU encoder's own functions.
  const std::vector<patch_position> positions = merge_block_positions(grid_h, grid_w, c.spatial_merge_size);
  const std::vector<position_taps> taps = position_table_taps(c.position_side(), positions, grid_h, grid_w);
  const vision_rotary rotary = make_vision_rotary(positions, c.head_dim(), c.rope_theta);

  const int tile = attention_query_tile(per_frame);
  const int merged = c.merged_hidden(), tokens = n / c.merge_unit();
  workspace ws(workspace_bytes(c, grid_t, grid_h, grid_w) + 16 * 256);  // + each part's rounding
  float* in = ws.take<float>(patch_floats);
  float* x = ws.take<float>(rows * h);
  float* normed = ws.take<float>(rows * h);
  float* qkv = ws.take<float>(rows * 3 * h);
  float* attended = ws.take<float>(rows * h);
  float* mlp = ws.take<float>(rows * inter);
  float* scores = ws.take<float>(static_cast<std::size_t>(tile) * per_frame);
  float* out = ws.take<float>(static_cast<std::size_t>(tokens) * c.out_hidden_size);
  float* dcos = ws.take<float>(rotary.cos.size());
  float* dsin = ws.take<float>(rotary.sin.size());
  position_taps* dtaps = ws.take<position_taps>(taps.size());
  CUDA_CHECK(cudaMemcpy(in, patches, patch_floats * sizeof(float), cudaMemcpyHostToDevice));
  upload(dcos, rotary.cos);
  upload(dsin, rotary.sin);
  upload(dtaps, taps);

  // 1-2. Patch embedding plus the resampled position table, frame by frame.
  vision_cuda::linear(in, n, c.patch_values(), d.patch_weight, d.patch_bias, h, x);
  vision_cuda::position_add(x, grid_t, per_frame, h, d.pos_embed, dtaps);

  // 3. The blocks (vision_encoder.cpp's run_block).
  const float eps = c.layer_norm_eps;
  for (const device_weights::block& b : d.blocks) {
    vision_cuda::layer_norm(x, n, h, b.norm1_weight, b.norm1_bias, eps, normed);
    vision_cuda::linear(normed, n, h, b.qkv_weight, b.qkv_bias, 3 * h, qkv);
    for (int f = 0; f < grid_t; ++f)
      vision_cuda::attention(qkv + static_cast<std::size_t>(f) * per_frame * 3 * h, per_frame, c.num_heads,
                             c.head_dim(), dcos, dsin, attended + static_cast<std::size_t>(f) * per_frame * h,
                             scores, tile);
    vision_cuda::linear(attended, n, h, b.proj_weight, b.proj_bias, h, x, true);

    vision_cuda::layer_norm(x, n, h, b.norm2_weight, b.norm2_bias, eps, normed);
    vision_cuda::linear(normed, n, h, b.fc1_weight, b.fc1_bias, inter, mlp);
    if (c.hidden_act == vision_activation::gelu_tanh) {
      vision_cuda::gelu_tanh(mlp, rows * inter);
    } else {
      vision_cuda::gelu_erf(mlp, rows * inter);
    }
    vision_cuda::linear(mlp, n, inter, b.fc2_weight, b.fc2_bias, h, x, true);
  }

  // 4. The merger: consecutive rows of one merge block are one merged row once normalised; its
  // hidden layer ([tokens, merged] = n * h floats) reuses `normed`.
  vision_cuda::layer_norm(x, n, h, d.merger_norm_weight, d.merger_norm_bias, eps, x);
  float* hidden = normed;
  vision_cuda::linear(x, tokens, merged, d.merger_fc1_weight, d.merger_fc1_bias, merged, hidden);
  vision_cuda::gelu_erf(hidden, static_cast<std::size_t>(tokens) * merged);
  vision_cuda::linear(hidden, tokens, merged, d.merger_fc2_weight, d.merger_fc2_bias, c.out_hidden_size, out);

  std::vector<float> result(static_cast<std::size_t>(tokens) * c.out_hidden_size);
  // A copy on the legacy default stream: it waits for every op above, and the host for it.
  CUDA_CHECK(cudaMemcpy(result.data(), out, result.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return result;
}

}  // namespace anchorage
