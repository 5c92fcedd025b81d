#include "kernels/dequantize.hpp"

#include <cassert>
#include <cstring>

namespace anchorage::kernels {
namespace {

std::uint16_t u16_at(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }

// Q8_0, 34 bytes: d fp16; qs[32] int8. x[i] = d * qs[i].
void q8_0_block(const std::uint8_t* b, float* y) {
  const float d = f16_to_f32(u16_at(b));
  for (int i = 0; i < 32; ++i) y[i] = static_cast<float>(static_cast<std::int8_t>(b[2 + i])) * d;
}

// Q4_0, 18 bytes: d fp16; qs[16]. Byte j holds value j (low nibble) and j + 16 (high nibble),
// each offset by 8.
void q4_0_block(const std::uint8_t* b, float* y) {
  const float d = f16_to_f32(u16_at(b));
  const std::uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0f) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// Q4_K, 144 bytes: d, dmin fp16; scales[12]; qs[128]. Chunk c (0..3) of 64 values reads
// qs[32c .. 32c + 31]: the low nibbles are values 64c + l of sub-block 2c, the high nibbles
// values 64c + 32 + l of sub-block 2c + 1. Q5_K adds a fifth bit: bit 2c (low) or 2c + 1 (high)
// of qh[l].
void k4_or_k5_block(const std::uint8_t* b, bool five, float* y) {
  const float d = f16_to_f32(u16_at(b));
  const float dmin = f16_to_f32(u16_at(b + 2));
  const std::uint8_t* scales = b + 4;
  const std::uint8_t* qh = five ? b + 16 : nullptr;
  const std::uint8_t* qs = five ? b + 48 : b + 16;
  for (int c = 0; c < 4; ++c) {
    for (int half = 0; half < 2; ++half) {
      const int s = 2 * c + half;
      int sc, m;
      k_scale_min(scales, s, &sc, &m);
      const float ds = d * static_cast<float>(sc);
      const float dm = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        const std::uint8_t byte = qs[32 * c + l];
        int q = half == 0 ? (byte & 0x0f) : (byte >> 4);
        if (five && ((qh[l] >> s) & 1)) q += 16;
        y[32 * s + l] = ds * static_cast<float>(q) - dm;
      }
    }
  }
}

// Q6_K, 210 bytes: ql[128]; qh[64]; scales[16] int8; d fp16. Half h (0, 1) of 128 values reads
// ql[64h ..], qh[32h ..]; for l in 0..31 value 128h + l + 32t (t = 0..3) takes its low 4 bits
// from ql[64h + l + 32 (t & 1)] (low nibble for t < 2, high for t >= 2) and its top 2 bits from
// bits 2t, 2t + 1 of qh[32h + l]; x = d * scales[e / 16] * (q - 32).
void q6_k_block(const std::uint8_t* b, float* y) {
  const std::uint8_t* ql = b;
  const std::uint8_t* qh = b + 128;
  const auto* scales = reinterpret_cast<const std::int8_t*>(b + 192);
  const float d = f16_to_f32(u16_at(b + 208));
  for (int h = 0; h < 2; ++h) {
    for (int t = 0; t < 4; ++t) {
      for (int l = 0; l < 32; ++l) {
        const std::uint8_t low_byte = ql[64 * h + l + 32 * (t & 1)];
        const int low = t < 2 ? (low_byte & 0x0f) : (low_byte >> 4);
        const int high = (qh[32 * h + l] >> (2 * t)) & 3;
        const int e = 128 * h + 32 * t + l;
        y[e] = d * static_cast<float>(scales[e / 16]) * static_cast<float>((low | (high << 4)) - 32);
      }
    }
  }
}

}  // namespace

void dequantize_row(weight_type type, const void* src, float* dst, int n) {
  const int be = block_elements(type);
  assert(n >= 0 && n % be == 0);
  const auto* p = static_cast<const std::uint8_t*>(src);
  const int blocks = n / be;
  const int bb = block_bytes(type);
  switch (type) {
    case weight_type::f32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case weight_type::f16:
      for (int i = 0; i < n; ++i) dst[i] = f16_to_f32(u16_at(p + 2L * i));
      return;
    case weight_type::bf16:
      for (int i = 0; i < n; ++i) dst[i] = bf16_to_f32(u16_at(p + 2L * i));
      return;
    case weight_type::q8_0:
      for (int i = 0; i < blocks; ++i)
        q8_0_block(p + static_cast<long>(i) * bb, dst + static_cast<long>(i) * be);
      return;
    case weight_type::q4_0:
      for (int i = 0; i < blocks; ++i)
        q4_0_block(p + static_cast<long>(i) * bb, dst + static_cast<long>(i) * be);
      return;
    case weight_type::q4_k:
    case weight_type::q5_k:
      for (int i = 0; i < blocks; ++i)
        k4_or_k5_block(p + static_cast<long>(i) * bb, type == weight_type::q5_k,
                       dst + static_cast<long>(i) * be);
      return;
    case weight_type::q6_k:
      for (int i = 0; i < blocks; ++i)
        q6_k_block(p + static_cast<long>(i) * bb, dst + static_cast<long>(i) * be);
      return;
  }
}

}  // namespace anchorage::kernels
