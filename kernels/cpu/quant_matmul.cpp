#include "kernels/quant_matmul.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <vector>

#include "kernels/dequantize.hpp"
#include "kernels/quant_matvec.hpp"

// Every sum below repeats, operation for operation and operand for operand, the one in
// kernels/cpu/quant_matvec.cpp for one row of x; what differs is only that a decoded weight
// vector is kept and used for several rows of x before the next is decoded. A change to the order
// there must be made here too (tests/kernels/test_quant_matmul.cpp checks the bits).

#include "kernels/cpu/quant_simd.hpp"

namespace anchorage::kernels::cpu {
namespace {

using namespace quant_simd;

typedef float v8 __attribute__((vector_size(32)));  // lane i: row i of a group of eight

constexpr int group = 8;                  // most activation rows per weight pass
constexpr long chunk_bytes = 512 * 1024;  // weight rows kept in cache across the groups

// What every tile reads: the activation rows and, for q4_K/q5_K, their sub-block sums.
struct tile_args {
  int k;
  const float* x;  // row i0 of the tile
  long ldx;
  // q4_K/q5_K: sx[s * group + l] is the sum, in order, of x over 32-value sub-block s of row
  // l of the tile's group of eight; the tile's rows are lanes off .. off + R - 1.
  const float* sx;
  int off;
};

// Each tile: out[i] = the product of weight row w with activation row i of the tile, i < R.

// Float types: lanes j % 16, two sets alternating every 16 values, a last 16 into the first set,
// the sets added, the lanes in order, the tail one by one.
template <class T>
struct dense {
  static constexpr int max_rows = group;
  template <int R>
  static ANCHORAGE_INLINE void tile(const tile_args& a, const std::uint8_t* w, float* out) {
    v16 acc0[R], acc1[R];
    for (int i = 0; i < R; ++i) acc0[i] = acc1[i] = v16{};
    int j = 0;
    for (; j + 32 <= a.k; j += 32) {
      const v16 w0 = T::vec(w + j * T::bytes), w1 = T::vec(w + (j + 16) * T::bytes);
      for (int i = 0; i < R; ++i) {
        acc0[i] += w0 * load<v16>(a.x + i * a.ldx + j);
        acc1[i] += w1 * load<v16>(a.x + i * a.ldx + j + 16);
      }
    }
    if (j + 16 <= a.k) {
      const v16 w0 = T::vec(w + j * T::bytes);
      for (int i = 0; i < R; ++i) acc0[i] += w0 * load<v16>(a.x + i * a.ldx + j);
      j += 16;
    }
    for (int i = 0; i < R; ++i) out[i] = lane_sum(acc0[i] + acc1[i]);
    for (; j < a.k; ++j) {
      const float wj = T::one(w + j * T::bytes);
      for (int i = 0; i < R; ++i) out[i] += wj * a.x[i * a.ldx + j];
    }
  }
};

// Q8_0: per block t = q[0..16) * x + q[16..32) * x, one lane set += t * d.
struct q8_0 {
  static constexpr int max_rows = group;
  template <int R>
  static ANCHORAGE_INLINE void tile(const tile_args& a, const std::uint8_t* w, float* out) {
    v16 acc[R];
    for (int i = 0; i < R; ++i) acc[i] = v16{};
    for (int b = 0; b < a.k / 32; ++b, w += 34) {
      const v16 q0 = i8_to_float(w + 2), q1 = i8_to_float(w + 18);
      const v16 d = splat(f16_to_f32(u16_at(w)));
      const float* x = a.x + 32 * b;
      for (int i = 0; i < R; ++i) {
        const v16 t = q0 * load<v16>(x + i * a.ldx) + q1 * load<v16>(x + i * a.ldx + 16);
        acc[i] += t * d;
      }
    }
    for (int i = 0; i < R; ++i) out[i] = lane_sum(acc[i]);
  }
};

// Q4_0: as Q8_0 with q = nibble - 8.
struct q4_0 {
  static constexpr int max_rows = group;
  template <int R>
  static ANCHORAGE_INLINE void tile(const tile_args& a, const std::uint8_t* w, float* out) {
    v16 acc[R];
    for (int i = 0; i < R; ++i) acc[i] = v16{};
    const v16 eight = splat(8.0f);
    for (int b = 0; b < a.k / 32; ++b, w += 18) {
      const u8x16 q = load<u8x16>(w + 2);
      const v16 q0 = u8_to_float(q & 0x0f) - eight, q1 = u8_to_float(q >> 4) - eight;
      const v16 d = splat(f16_to_f32(u16_at(w)));
      const float* x = a.x + 32 * b;
      for (int i = 0; i < R; ++i) {
        const v16 t = q0 * load<v16>(x + i * a.ldx) + q1 * load<v16>(x + i * a.ldx + 16);
        acc[i] += t * d;
      }
    }
    for (int i = 0; i < R; ++i) out[i] = lane_sum(acc[i]);
  }
};

// Q4_K, Q5_K: even and odd sub-blocks in two lane sets, each += t * (d * sc); the min terms
// (dmin * m) * sx in order, subtracted at the end.
template <bool five>
struct k4_or_k5 {
  static constexpr int max_rows = group;
  template <int R>
  static ANCHORAGE_INLINE void tile(const tile_args& a, const std::uint8_t* w, float* out) {
    v16 acc_lo[R], acc_hi[R];
    for (int i = 0; i < R; ++i) acc_lo[i] = acc_hi[i] = v16{};
    v8 mins{};
    const float* sx = a.sx;
    for (int b = 0; b < a.k / 256; ++b, w += five ? 176 : 144, sx += 8 * group) {
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
        int sc_lo, m_lo, sc_hi, m_hi;
        k_scale_min(w + 4, 2 * c, &sc_lo, &m_lo);
        k_scale_min(w + 4, 2 * c + 1, &sc_hi, &m_hi);
        const v16 flo0 = u8_to_float(lo0), flo1 = u8_to_float(lo1);
        const v16 fhi0 = u8_to_float(hi0), fhi1 = u8_to_float(hi1);
        const v16 s_lo = splat(d * static_cast<float>(sc_lo)), s_hi = splat(d * static_cast<float>(sc_hi));
        const float* xc = a.x + 256 * b + 64 * c;
        for (int i = 0; i < R; ++i) {
          const float* xi = xc + i * a.ldx;
          const v16 t_lo = flo0 * load<v16>(xi) + flo1 * load<v16>(xi + 16);
          acc_lo[i] += t_lo * s_lo;
          const v16 t_hi = fhi0 * load<v16>(xi + 32) + fhi1 * load<v16>(xi + 48);
          acc_hi[i] += t_hi * s_hi;
        }
        // quant_matvec's `mins += dmin * m * sx`, for the group's eight rows at once.
        mins += (v8{} + dmin * static_cast<float>(m_lo)) * load<v8>(sx + (2 * c) * group);
        mins += (v8{} + dmin * static_cast<float>(m_hi)) * load<v8>(sx + (2 * c + 1) * group);
      }
    }
    for (int i = 0; i < R; ++i) out[i] = lane_sum(acc_lo[i] + acc_hi[i]) - mins[a.off + i];
  }
};

// Q6_K: four lane sets per row (quarter t of each half), each += ((q - 32) * x) * (d * sc).
struct q6_k {
  static constexpr int max_rows = 4;  // 16 running lane sets fill half of AVX-512's registers
  template <int R>
  static ANCHORAGE_INLINE void tile(const tile_args& a, const std::uint8_t* w, float* out) {
    v16 acc[R][4];
    for (int i = 0; i < R; ++i)
      for (int t = 0; t < 4; ++t) acc[i][t] = v16{};
    for (int b = 0; b < a.k / 256; ++b, w += 210) {
      float dsc[16];
      const v16 dv = (u8_to_float(load<u8x16>(w + 192) ^ 0x80) - 128.0f) * f16_to_f32(u16_at(w + 208));
      __builtin_memcpy(dsc, &dv, sizeof dsc);
      for (int h = 0; h < 2; ++h) {
        for (int g = 0; g < 2; ++g) {
          const u8x16 ql0 = load<u8x16>(w + 64 * h + 16 * g);
          const u8x16 ql1 = load<u8x16>(w + 64 * h + 32 + 16 * g);
          const u8x16 qh = load<u8x16>(w + 128 + 32 * h + 16 * g);
          const u8x16 q[4] = {(ql0 & 0x0f) | ((qh << 4) & 0x30), (ql1 & 0x0f) | ((qh << 2) & 0x30),
                              (ql0 >> 4) | (qh & 0x30), (ql1 >> 4) | ((qh >> 2) & 0x30)};
          for (int t = 0; t < 4; ++t) {
            const int e = 128 * h + 32 * t + 16 * g;
            const v16 qf = u8_to_float(q[t]) - 32.0f;
            const float s = dsc[e / 16];
            for (int i = 0; i < R; ++i) {
              const v16 v = qf * load<v16>(a.x + i * a.ldx + 256 * b + e);
              acc[i][t] += v * s;
            }
          }
        }
      }
    }
    for (int i = 0; i < R; ++i) out[i] = lane_sum((acc[i][0] + acc[i][1]) + (acc[i][2] + acc[i][3]));
  }
};

// Weight rows [r0, r1) against the R activation rows from i0.
template <class K, int R>
ANCHORAGE_INLINE void pass(tile_args a, int i0, int r0, int r1, const std::uint8_t* w, long rb, float* y,
                           long ldy) {
  a.x += i0 * a.ldx;
  a.off = i0 % group;
  if (a.sx != nullptr) a.sx += static_cast<long>(i0 / group) * (a.k / 32) * group;
  float out[R];
  for (int r = r0; r < r1; ++r) {
    K::template tile<R>(a, w + r * rb, out);
    for (int i = 0; i < R; ++i) y[(i0 + i) * ldy + r] = out[i];
  }
}

// All rows: weight rows by chunks; within a chunk, the activation rows by groups of K::max_rows,
// the rest in passes of 4, 2 and 1 (each a different instance, so no row is ever padded).
template <class K>
ANCHORAGE_INLINE void all_rows(const tile_args& a, int m, int n, const std::uint8_t* w, long rb, float* y,
                               long ldy) {
  const int chunk = static_cast<int>(std::max(1L, chunk_bytes / std::max(1L, rb)));
  for (int r0 = 0; r0 < n; r0 += chunk) {
    const int r1 = n - r0 < chunk ? n : r0 + chunk;
    int i0 = 0;
    for (; i0 + K::max_rows <= m; i0 += K::max_rows) pass<K, K::max_rows>(a, i0, r0, r1, w, rb, y, ldy);
    if constexpr (K::max_rows > 4) {
      if (i0 + 4 <= m) {
        pass<K, 4>(a, i0, r0, r1, w, rb, y, ldy);
        i0 += 4;
      }
    }
    if (i0 + 2 <= m) {
      pass<K, 2>(a, i0, r0, r1, w, rb, y, ldy);
      i0 += 2;
    }
    if (i0 < m) pass<K, 1>(a, i0, r0, r1, w, rb, y, ldy);
  }
}

// One function per type, compiled per CPU (everything above inlines into it).
#define ANCHORAGE_MATMUL(name, kind)                                                          \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void name(                     \
      const tile_args& a, int m, int n, const std::uint8_t* w, long rb, float* y, long ldy) { \
    all_rows<kind>(a, m, n, w, rb, y, ldy);                                                   \
  }

ANCHORAGE_MATMUL(matmul_f32, dense<as_f32>)
ANCHORAGE_MATMUL(matmul_bf16, dense<as_bf16>)
ANCHORAGE_MATMUL(matmul_f16, dense<as_f16>)
ANCHORAGE_MATMUL(matmul_q8_0, q8_0)
ANCHORAGE_MATMUL(matmul_q4_0, q4_0)
ANCHORAGE_MATMUL(matmul_q4_k, k4_or_k5<false>)
ANCHORAGE_MATMUL(matmul_q5_k, k4_or_k5<true>)
ANCHORAGE_MATMUL(matmul_q6_k, q6_k)

#undef ANCHORAGE_MATMUL

}  // namespace

void quant_matmul(weight_type type, int m, int n, int k, const float* x, int ldx, const void* w, float* y,
                  int ldy) {
  const auto bytes = row_bytes(type, k);
  assert(bytes && m >= 0 && n >= 0);
  assert(m <= 1 || ldx >= k);
  assert(m <= 1 || ldy >= n);
  if (m == 0 || n == 0) return;
  // One row is quant_matvec itself (the tiles' one-row form has its order but reads the sums of
  // x over q4_K/q5_K sub-blocks from the eight-row layout, a little slower).
  if (m == 1) return quant_matvec(type, n, k, w, x, y);
  const auto* p = static_cast<const std::uint8_t*>(w);
  const long rb = static_cast<long>(*bytes);
  tile_args a{k, x, ldx, nullptr, 0};
  switch (type) {
    case weight_type::f32:
      return matmul_f32(a, m, n, p, rb, y, ldy);
    case weight_type::bf16:
      return matmul_bf16(a, m, n, p, rb, y, ldy);
    case weight_type::f16:
      return matmul_f16(a, m, n, p, rb, y, ldy);
    case weight_type::q8_0:
      return matmul_q8_0(a, m, n, p, rb, y, ldy);
    case weight_type::q4_0:
      return matmul_q4_0(a, m, n, p, rb, y, ldy);
    case weight_type::q4_k:
    case weight_type::q5_k: {
      // Each row's sum of x over each 32-value sub-block, added in order as quant_matvec adds it,
      // laid out by groups of eight rows, sub-block, then row (lanes past m stay 0).
      const int subs = k / 32;
      const int groups = (m + group - 1) / group;
      std::vector<float> sx(static_cast<std::size_t>(groups) * subs * group, 0.0f);
      for (int i = 0; i < m; ++i) {
        const float* xi = x + static_cast<long>(i) * ldx;
        float* gi = sx.data() + static_cast<long>(i / group) * subs * group + i % group;
        for (int s = 0; s < subs; ++s) {
          float t = 0.0f;
          for (int l = 0; l < 32; ++l) t += xi[32 * s + l];
          gi[s * group] = t;
        }
      }
      a.sx = sx.data();
      if (type == weight_type::q4_k) return matmul_q4_k(a, m, n, p, rb, y, ldy);
      return matmul_q5_k(a, m, n, p, rb, y, ldy);
    }
    case weight_type::q6_k:
      return matmul_q6_k(a, m, n, p, rb, y, ldy);
  }
}

}  // namespace anchorage::kernels::cpu
