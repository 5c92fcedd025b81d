#pragma once
// A weight matrix as its file stores it (issue 25): rows of one kernels::weight_type (a GGUF's F32,
// F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), read in place from the file's read-only mapping, never
// converted (an F32 one in the file's order is read by the float32 products, engine_weights.cpp).
// The engine multiplies by it with kernels::cpu::quant_matmul (runtime/engine/engine_linear.hpp).
//
// A GGUF file written by llama.cpp's converter keeps a Gated DeltaNet layer's value heads in
// "tiled" order where the Hugging Face checkpoint has them "grouped" (runtime/engine/
// qwen35_gguf_tensors.cpp): along the rows of in_proj_qkv (past its query and key rows), in_proj_z,
// in_proj_a and in_proj_b, and along the columns of out_proj. Rows of a block type cannot be
// re-cut along their columns (a Q4_K block spans 256 columns, two value heads of 128), so the
// stored tensor keeps the file's order and says so (`v_head_order`): the engine permutes the
// product's output rows back, or the input of out_proj forward, which moves floats and changes no
// arithmetic of the product itself.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/weight_type.hpp"
#include "runtime/core/tensor.hpp"

namespace anchorage {

// Value-head blocks of `hd` elements, tiled (r * hk + k) in the file where the Hugging Face
// layout groups them (k * r_per_k + r), along the rows from row `first` or along the columns.
struct v_head_order {
  enum class axis { none, rows, columns };
  axis along = axis::none;
  std::int64_t first = 0;  // rows: the first row of the value heads
  int hd = 0;              // elements per head block
  int hk = 0;              // key heads
  int r_per_k = 0;         // value heads per key head
  std::int64_t span() const { return static_cast<std::int64_t>(hk) * r_per_k * hd; }
};

// Moves `n` groups of span() floats from tiled to grouped order (to_grouped) or back: each group
// starts `stride` floats after the previous, from `src` to `dst` (which must not overlap).
void permute_v_heads(const v_head_order& o, bool to_grouped, const float* src, long src_stride, float* dst,
                     long dst_stride, int n);

struct stored_weight {
  std::vector<std::int64_t> shape;  // PyTorch order, as weight_specs() gives it
  kernels::weight_type type = kernels::weight_type::f32;
  const unsigned char* data = nullptr;  // rows() rows of kernels::row_bytes(type, cols()) bytes
  std::shared_ptr<const void> owner;    // keeps `data` alive: the file's mapping
  v_head_order order;

  std::int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  std::int64_t rows() const;
  std::size_t bytes() const;
};

// Weights kept as stored, under their Hugging Face names; iteration in name order.
using stored_weights = std::map<std::string, stored_weight>;

// The float32 tensor the Hugging Face layout has for `w` (each row through
// kernels::dequantize_row, the value heads put back in grouped order): what loading the file
// converted to before issue 25, bit for bit.
tensor to_f32(const stored_weight& w);

}  // namespace anchorage
