#include "runtime/model/stored_weight.hpp"

#include <cstring>

#include "kernels/dequantize.hpp"

namespace anchorage {
namespace {

std::int64_t grouped(const v_head_order& o, std::int64_t k, std::int64_t r) { return k * o.r_per_k + r; }
std::int64_t tiled(const v_head_order& o, std::int64_t k, std::int64_t r) { return r * o.hk + k; }

}  // namespace

void permute_v_heads(const v_head_order& o, bool to_grouped, const float* src, long src_stride, float* dst,
                     long dst_stride, int n) {
  const auto hd = static_cast<std::size_t>(o.hd);
  for (int i = 0; i < n; ++i) {
    const float* s = src + static_cast<long>(i) * src_stride;
    float* t = dst + static_cast<long>(i) * dst_stride;
    for (std::int64_t k = 0; k < o.hk; ++k)
      for (std::int64_t r = 0; r < o.r_per_k; ++r) {
        const std::int64_t from = to_grouped ? tiled(o, k, r) : grouped(o, k, r);
        const std::int64_t to = to_grouped ? grouped(o, k, r) : tiled(o, k, r);
        std::memcpy(t + to * o.hd, s + from * o.hd, hd * sizeof(float));
      }
  }
}

std::int64_t stored_weight::rows() const {
  std::int64_t n = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
  return n;
}

std::size_t stored_weight::bytes() const {
  const auto row = kernels::row_bytes(type, cols());
  return row ? static_cast<std::size_t>(*row * rows()) : 0;
}

tensor to_f32(const stored_weight& w) {
  tensor t;
  t.shape = w.shape;
  const std::int64_t rows = w.rows(), cols = w.cols();
  t.data.resize(static_cast<std::size_t>(rows * cols));
  const auto row = static_cast<std::size_t>(kernels::row_bytes(w.type, cols).value_or(0));
  for (std::int64_t r = 0; r < rows; ++r)
    kernels::dequantize_row(w.type, w.data + static_cast<std::size_t>(r) * row, t.data.data() + r * cols,
                            static_cast<int>(cols));
  const v_head_order& o = w.order;
  if (o.along == v_head_order::axis::none) return t;
  const std::vector<float> file = t.data;
  if (o.along == v_head_order::axis::columns) {
    permute_v_heads(o, true, file.data(), static_cast<long>(cols), t.data.data(), static_cast<long>(cols),
                    static_cast<int>(rows));
    return t;
  }
  // Rows: whole rows move, so permute a column of row indices and copy each row.
  for (std::int64_t k = 0; k < o.hk; ++k)
    for (std::int64_t r = 0; r < o.r_per_k; ++r)
      for (std::int64_t d = 0; d < o.hd; ++d) {
        const std::int64_t from = o.first + tiled(o, k, r) * o.hd + d;
        const std::int64_t to = o.first + grouped(o, k, r) * o.hd + d;
        std::memcpy(t.data.data() + to * cols, file.data() + from * cols,
                    static_cast<std::size_t>(cols) * sizeof(float));
      }
  return t;
}

}  // namespace anchorage
