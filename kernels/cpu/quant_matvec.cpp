#include "kernels/quant_matvec.hpp"

#include <cassert>
#include <cstdint>
#include <vector>

#include "kernels/dequantize.hpp"

#include "kernels/cpu/quant_simd.hpp"

namespace anchorage::kernels::cpu {
namespace {

using namespace quant_simd;

// One row of a float type (see the header for the order).
template <class T>
ANCHORAGE_INLINE float dense_row(const std::uint8_t* w, const float* x, int k) {
  v16 acc0{}, acc1{};
  int i = 0;
  for (; i + 32 <= k; i += 32) {
    acc0 += T::vec(w + i * T::bytes) * load<v16>(x + i);
    acc1 += T::vec(w + (i + 16) * T::bytes) * load<v16>(x + i + 16);
  }
  if (i + 16 <= k) {
    acc0 += T::vec(w + i * T::bytes) * load<v16>(x + i);
    i += 16;
  }
  float s = lane_sum(acc0 + acc1);
  for (; i < k; ++i) s += T::one(w + i * T::bytes) * x[i];
  return s;
}

// Q8_0 (34-byte blocks: d fp16, qs[32] int8).
ANCHORAGE_INLINE float q8_0_row(const std::uint8_t* w, const float* x, int k) {
  v16 acc{};
  for (int b = 0; b < k / 32; ++b, w += 34, x += 32) {
    const v16 t = i8_to_float(w + 2) * load<v16>(x) + i8_to_float(w + 18) * load<v16>(x + 16);
    acc += t * splat(f16_to_f32(u16_at(w)));
  }
  return lane_sum(acc);
}

// Q4_0 (18-byte blocks: d fp16, qs[16]; byte j: value j low, j + 16 high, each minus 8).
ANCHORAGE_INLINE float q4_0_row(const std::uint8_t* w, const float* x, int k) {
  v16 acc{};
  const v16 eight = splat(8.0f);
  for (int b = 0; b < k / 32; ++b, w += 18, x += 32) {
    const u8x16 q = load<u8x16>(w + 2);
    const v16 t =
        (u8_to_float(q & 0x0f) - eight) * load<v16>(x) + (u8_to_float(q >> 4) - eight) * load<v16>(x + 16);
    acc += t * splat(f16_to_f32(u16_at(w)));
  }
  return lane_sum(acc);
}

// Q4_K and Q5_K (144/176-byte super-blocks). sx[s] is the sum of x over sub-block s.
template <bool five>
ANCHORAGE_INLINE float k4_or_k5_row(const std::uint8_t* w, const float* x, const float* sx, int k) {
  v16 acc_lo{}, acc_hi{};  // even and odd sub-blocks: two chains of adds instead of one
  float mins = 0.0f;
  for (int b = 0; b < k / 256; ++b, w += five ? 176 : 144, x += 256, sx += 8) {
    const float d = f16_to_f32(u16_at(w));
    const float dmin = f16_to_f32(u16_at(w + 2));
    const std::uint8_t* qs = w + (five ? 48 : 16);
    u8x16 qh0{}, qh1{};
    if (five) {
      qh0 = load<u8x16>(w + 16);
      qh1 = load<u8x16>(w + 32);
    }
    for (int c = 0; c < 4; ++c) {
      const auto [lo0, lo1, hi0, hi1] = k_values<five>(qs, qh0, qh1, c);
      const float* xc = x + 64 * c;
      int sc_lo, m_lo, sc_hi, m_hi;
      k_scale_min(w + 4, 2 * c, &sc_lo, &m_lo);
      k_scale_min(w + 4, 2 * c + 1, &sc_hi, &m_hi);
      const v16 t_lo = u8_to_float(lo0) * load<v16>(xc) + u8_to_float(lo1) * load<v16>(xc + 16);
      acc_lo += t_lo * splat(d * static_cast<float>(sc_lo));
      const v16 t_hi = u8_to_float(hi0) * load<v16>(xc + 32) + u8_to_float(hi1) * load<v16>(xc + 48);
      acc_hi += t_hi * splat(d * static_cast<float>(sc_hi));
      mins += dmin * static_cast<float>(m_lo) * sx[2 * c];
      mins += dmin * static_cast<float>(m_hi) * sx[2 * c + 1];
    }
  }
  return lane_sum(acc_lo + acc_hi) - mins;
}

// Q6_K (210-byte super-blocks: ql[128], qh[64], scales[16] int8, d fp16).
ANCHORAGE_INLINE float q6_k_row(const std::uint8_t* w, const float* x, int k) {
  v16 acc[4] = {};  // one per quarter t of each half: four chains of adds instead of one
  for (int b = 0; b < k / 256; ++b, w += 210, x += 256) {
    // d * scales[i] for the 16 sub-blocks, converted at once (the scales are signed bytes).
    float dsc[16];
    const v16 dv = (u8_to_float(load<u8x16>(w + 192) ^ 0x80) - 128.0f) * f16_to_f32(u16_at(w + 208));
    __builtin_memcpy(dsc, &dv, sizeof dsc);
    for (int h = 0; h < 2; ++h) {
      for (int g = 0; g < 2; ++g) {  // l in [16g, 16g + 16)
        const u8x16 ql0 = load<u8x16>(w + 64 * h + 16 * g);
        const u8x16 ql1 = load<u8x16>(w + 64 * h + 32 + 16 * g);
        const u8x16 qh = load<u8x16>(w + 128 + 32 * h + 16 * g);
        // q | (bits 2t, 2t + 1 of qh) << 4, each high pair moved straight to bits 4-5.
        const u8x16 q[4] = {(ql0 & 0x0f) | ((qh << 4) & 0x30), (ql1 & 0x0f) | ((qh << 2) & 0x30),
                            (ql0 >> 4) | (qh & 0x30), (ql1 >> 4) | ((qh >> 2) & 0x30)};
        for (int t = 0; t < 4; ++t) {
          const int e = 128 * h + 32 * t + 16 * g;
          const v16 v = (u8_to_float(q[t]) - 32.0f) * load<v16>(x + e);
          acc[t] += v * dsc[e / 16];
        }
      }
    }
  }
  return lane_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
}

// One function per type over all rows, each compiled per CPU (the row functions inline into it).
#define ANCHORAGE_ROWS(name, call)                                                                         \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void name(                                  \
      int rows, int k, const std::uint8_t* w, long row_bytes, const float* x, const float* sx, float* y) { \
    (void)sx;                                                                                              \
    for (int r = 0; r < rows; ++r, w += row_bytes) y[r] = call;                                            \
  }

ANCHORAGE_ROWS(rows_f32, dense_row<as_f32>(w, x, k))
ANCHORAGE_ROWS(rows_bf16, dense_row<as_bf16>(w, x, k))
ANCHORAGE_ROWS(rows_f16, dense_row<as_f16>(w, x, k))
ANCHORAGE_ROWS(rows_q8_0, q8_0_row(w, x, k))
ANCHORAGE_ROWS(rows_q4_0, q4_0_row(w, x, k))
ANCHORAGE_ROWS(rows_q4_k, k4_or_k5_row<false>(w, x, sx, k))
ANCHORAGE_ROWS(rows_q5_k, k4_or_k5_row<true>(w, x, sx, k))
ANCHORAGE_ROWS(rows_q6_k, q6_k_row(w, x, k))

#undef ANCHORAGE_ROWS

}  // namespace

void quant_matvec(weight_type type, int rows, int k, const void* w, const float* x, float* y) {
  const auto bytes = row_bytes(type, k);
  assert(bytes && rows >= 0);
  const auto* p = static_cast<const std::uint8_t*>(w);
  const long rb = static_cast<long>(*bytes);
  switch (type) {
    case weight_type::f32:
      return rows_f32(rows, k, p, rb, x, nullptr, y);
    case weight_type::bf16:
      return rows_bf16(rows, k, p, rb, x, nullptr, y);
    case weight_type::f16:
      return rows_f16(rows, k, p, rb, x, nullptr, y);
    case weight_type::q8_0:
      return rows_q8_0(rows, k, p, rb, x, nullptr, y);
    case weight_type::q4_0:
      return rows_q4_0(rows, k, p, rb, x, nullptr, y);
    case weight_type::q4_k:
    case weight_type::q5_k: {
      // The sum of x over each 32-value sub-block, for the min terms (once for all rows).
      std::vector<float> sx(static_cast<std::size_t>(k / 32));
      for (int s = 0; s < k / 32; ++s) {
        float t = 0.0f;
        for (int l = 0; l < 32; ++l) t += x[32 * s + l];
        sx[static_cast<std::size_t>(s)] = t;
      }
      if (type == weight_type::q4_k) return rows_q4_k(rows, k, p, rb, x, sx.data(), y);
      return rows_q5_k(rows, k, p, rb, x, sx.data(), y);
    }
    case weight_type::q6_k:
      return rows_q6_k(rows, k, p, rb, x, nullptr, y);
  }
}

}  // namespace anchorage::kernels::cpu
