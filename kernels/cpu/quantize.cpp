#include "kernels/quantize.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/dequantize.hpp"

namespace anchorage::kernels {
namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

// value >> shift, rounded to nearest, ties to even (1 <= shift <= 31).
std::uint32_t shift_round_even(std::uint32_t value, unsigned shift) {
  const std::uint32_t kept = value >> shift;
  const std::uint32_t rest = value & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u) != 0)) ? 1u : 0u);
}

void put_u16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v & 0xff);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}

// Nearest integer, ties to even (ggml's nearest_int; the default rounding mode).
int nearest(float f) { return static_cast<int>(std::nearbyint(f)); }

// The signed value of largest magnitude in x[0..n) (the first on ties), and that magnitude.
void signed_max(const float* x, int n, float* max, float* amax) {
  *max = 0.0f;
  *amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (*amax < std::fabs(x[i])) {
      *amax = std::fabs(x[i]);
      *max = x[i];
    }
  }
}

void q8_0_block(const float* x, std::uint8_t* b) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_u16(b, f32_to_f16(d));
  for (int i = 0; i < 32; ++i)
    b[2 + i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(x[i] * id)));
}

void q4_0_block(const float* x, std::uint8_t* b) {
  float max, amax;
  signed_max(x, 32, &max, &amax);
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put_u16(b, f32_to_f16(d));
  for (int j = 0; j < 16; ++j) {
    const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
    const int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
    b[2 + j] = static_cast<std::uint8_t>(lo | (hi << 4));
  }
}

// Q4_K (nmax 15) and Q5_K (nmax 31); see the header for how the sub-block scales are chosen.
void k4_or_k5_block(const float* x, bool five, std::uint8_t* b) {
  const int nmax = five ? 31 : 15;
  std::uint8_t levels[256];
  float scale[8], min[8];  // min[j] is -(the sub-block's minimum), >= 0
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float lo = xs[0], hi = xs[0];
    for (int l = 1; l < 32; ++l) {
      lo = std::min(lo, xs[l]);
      hi = std::max(hi, xs[l]);
    }
    if (lo > 0.0f) lo = 0.0f;
    if (hi == lo) {
      scale[j] = 0.0f;
      for (int l = 0; l < 32; ++l) levels[32 * j + l] = 0;
    } else {
      const float iscale = static_cast<float>(nmax) / (hi - lo);
      scale[j] = 1.0f / iscale;
      for (int l = 0; l < 32; ++l)
        levels[32 * j + l] = static_cast<std::uint8_t>(std::clamp(nearest(iscale * (xs[l] - lo)), 0, nmax));
    }
    min[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }

  std::uint8_t* scales = b + 4;
  std::memset(scales, 0, 12);
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < 8; ++j) {
    const int ls = std::min(63, nearest(inv_scale * scale[j]));
    const int lm = std::min(63, nearest(inv_min * min[j]));
    if (j < 4) {
      scales[j] |= static_cast<std::uint8_t>(ls);
      scales[j + 4] |= static_cast<std::uint8_t>(lm);
    } else {
      scales[j + 4] = static_cast<std::uint8_t>((ls & 0x0f) | ((lm & 0x0f) << 4));
      scales[j - 4] |= static_cast<std::uint8_t>((ls >> 4) << 6);
      scales[j] |= static_cast<std::uint8_t>((lm >> 4) << 6);
    }
  }
  const std::uint16_t d16 = f32_to_f16(max_scale / 63.0f);
  const std::uint16_t dmin16 = f32_to_f16(max_min / 63.0f);
  put_u16(b, d16);
  put_u16(b + 2, dmin16);

  // Each q again, from the scales as stored.
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    k_scale_min(scales, j, &sc, &m);
    const float d = f16_to_f32(d16) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = f16_to_f32(dmin16) * static_cast<float>(m);
    for (int l = 0; l < 32; ++l)
      levels[32 * j + l] = static_cast<std::uint8_t>(std::clamp(nearest((x[32 * j + l] + dm) / d), 0, nmax));
  }

  std::uint8_t* qh = five ? b + 16 : nullptr;
  std::uint8_t* qs = five ? b + 48 : b + 16;
  if (five) std::memset(qh, 0, 32);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int lo = levels[64 * c + l], hi = levels[64 * c + 32 + l];
      qs[32 * c + l] = static_cast<std::uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      if (five) qh[l] |= static_cast<std::uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  }
}

void q6_k_block(const float* x, std::uint8_t* b) {
  constexpr float group_max_eps = 1e-15f;  // ggml's GROUP_MAX_EPS
  std::uint8_t levels[256];                // q + 32, 0..63
  float scale[16];
  float max_scale = 0.0f, max_abs_scale = 0.0f;
  for (int s = 0; s < 16; ++s) {
    const float* xs = x + 16 * s;
    float max, amax;
    signed_max(xs, 16, &max, &amax);
    if (amax < group_max_eps) {
      scale[s] = 0.0f;
      for (int l = 0; l < 16; ++l) levels[16 * s + l] = 0;
    } else {
      const float iscale = -32.0f / max;
      scale[s] = 1.0f / iscale;
      for (int l = 0; l < 16; ++l)
        levels[16 * s + l] = static_cast<std::uint8_t>(32 + std::clamp(nearest(iscale * xs[l]), -32, 31));
    }
    if (std::fabs(scale[s]) > max_abs_scale) {
      max_abs_scale = std::fabs(scale[s]);
      max_scale = scale[s];
    }
  }
  std::memset(b, 0, 210);
  if (max_abs_scale < group_max_eps) return;  // all zero: d = 0

  std::uint8_t* ql = b;
  std::uint8_t* qh = b + 128;
  auto* scales = reinterpret_cast<std::int8_t*>(b + 192);
  const float iscale = -128.0f / max_scale;
  const std::uint16_t d16 = f32_to_f16(1.0f / iscale);
  put_u16(b + 208, d16);
  for (int s = 0; s < 16; ++s)
    scales[s] = static_cast<std::int8_t>(std::min(127, nearest(iscale * scale[s])));

  for (int s = 0; s < 16; ++s) {
    const float d = f16_to_f32(d16) * static_cast<float>(scales[s]);
    if (d == 0.0f) continue;
    for (int l = 0; l < 16; ++l)
      levels[16 * s + l] = static_cast<std::uint8_t>(32 + std::clamp(nearest(x[16 * s + l] / d), -32, 31));
  }

  // Half h, l in 0..31: values 128h + l + 32t, t = 0..3 (see kernels/cpu/dequantize.cpp).
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const std::uint8_t* q = levels + 128 * h + l;
      ql[64 * h + l] = static_cast<std::uint8_t>((q[0] & 0x0f) | ((q[64] & 0x0f) << 4));
      ql[64 * h + l + 32] = static_cast<std::uint8_t>((q[32] & 0x0f) | ((q[96] & 0x0f) << 4));
      qh[32 * h + l] = static_cast<std::uint8_t>((q[0] >> 4) | ((q[32] >> 4) << 2) | ((q[64] >> 4) << 4) |
                                                 ((q[96] >> 4) << 6));
    }
  }
}

}  // namespace

std::uint16_t f32_to_f16(float f) {
  std::uint32_t x = bits_of(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));  // NaN
  if (x >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // inf, or rounds past 65504
  if (x < 0x38800000u) {                                                    // below 2^-14: subnormal half
    if (x < 0x33000000u) return sign;                                       // below 2^-25: rounds to 0
    const std::uint32_t e = x >> 23;                                        // 102..112
    const std::uint32_t m = (x & 0x7fffffu) | 0x800000u;
    // The value is m * 2^(e - 150) and the result counts units of 2^-24.
    return static_cast<std::uint16_t>(sign | shift_round_even(m, 126u - e));
  }
  // Normal: rebias the exponent (127 -> 15) and drop 13 mantissa bits; a carry out of the
  // mantissa moves into the exponent, as it should.
  return static_cast<std::uint16_t>(sign | shift_round_even(x - 0x38000000u, 13));
}

std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>(shift_round_even(x, 16));
}

void quantize_row(weight_type type, const float* src, void* dst, int n) {
  const int be = block_elements(type);
  assert(n >= 0 && n % be == 0);
  auto* p = static_cast<std::uint8_t*>(dst);
  const long blocks = n / be;
  const long bb = block_bytes(type);
  switch (type) {
    case weight_type::f32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case weight_type::f16:
      for (long i = 0; i < n; ++i) put_u16(p + 2 * i, f32_to_f16(src[i]));
      return;
    case weight_type::bf16:
      for (long i = 0; i < n; ++i) put_u16(p + 2 * i, f32_to_bf16(src[i]));
      return;
    case weight_type::q8_0:
      for (long i = 0; i < blocks; ++i) q8_0_block(src + i * be, p + i * bb);
      return;
    case weight_type::q4_0:
      for (long i = 0; i < blocks; ++i) q4_0_block(src + i * be, p + i * bb);
      return;
    case weight_type::q4_k:
    case weight_type::q5_k:
      for (long i = 0; i < blocks; ++i) k4_or_k5_block(src + i * be, type == weight_type::q5_k, p + i * bb);
      return;
    case weight_type::q6_k:
      for (long i = 0; i < blocks; ++i) q6_k_block(src + i * be, p + i * bb);
      return;
  }
}

}  // namespace anchorage::kernels
