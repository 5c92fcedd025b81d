#pragma once
// The vector helpers the CPU kernels over stored weight types share (quant_matvec.cpp,
// quant_matmul.cpp): GCC vector types, loads that make no alignment claim, and exact conversions
// of bytes, halves and bfloat16s to floats, in the forms GCC 12 vectorises. Internal to
// kernels/cpu: a kernel's .cpp includes it before its own code, since its pragmas (no -Wpsabi
// warning, no fused multiply-add) hold for the rest of the file.
#include <cstdint>

#include "kernels/weight_type.hpp"

// The helpers below take and return 64-byte vectors by value; GCC warns that the ABI for that
// differs with and without AVX-512. They are all always_inline into the per-CPU clones, so no
// such value crosses a call.
#pragma GCC diagnostic ignored "-Wpsabi"
// A multiply and an add stay two roundings in every clone: GCC's C++ default (-ffp-contract=fast)
// would fuse them where the target has FMA (the avx512f clone) and not elsewhere, and the clones
// would then disagree in the last bits.
#pragma GCC optimize("fp-contract=off")

namespace anchorage::kernels::cpu::quant_simd {

// 16 lanes: one AVX-512 register, two AVX2 ones; GCC lowers the types for the default clone.
typedef float v16 __attribute__((vector_size(64)));
typedef std::uint32_t u32x16 __attribute__((vector_size(64)));
typedef std::int32_t i32x16 __attribute__((vector_size(64)));
typedef std::uint16_t u16x16 __attribute__((vector_size(32)));
typedef std::uint8_t u8x16 __attribute__((vector_size(16)));

#define ANCHORAGE_INLINE inline __attribute__((always_inline))

template <class V>
ANCHORAGE_INLINE V load(const void* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

ANCHORAGE_INLINE v16 splat(float f) { return v16{} + f; }

ANCHORAGE_INLINE float lane_sum(const v16& v) {
  float s = 0.0f;
  for (int l = 0; l < 16; ++l) s += v[l];
  return s;
}

ANCHORAGE_INLINE std::uint16_t u16_at(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

// Bytes to floats in two steps (widen, then convert): GCC 12 turns a direct byte-to-float
// conversion into sixteen scalar ones. Signed bytes are flipped to unsigned (q + 128) and the
// 128 taken off as a float (exact): GCC 12 also scalarises a sign-extension of loaded bytes.
ANCHORAGE_INLINE v16 u8_to_float(u8x16 q) {
  return __builtin_convertvector(__builtin_convertvector(q, i32x16), v16);
}
ANCHORAGE_INLINE v16 i8_to_float(const std::uint8_t* p) {
  return u8_to_float(load<u8x16>(p) ^ 0x80) - 128.0f;
}

// 16 halves to floats, exactly: the half's exponent and mantissa shifted into a float's place
// read as a float is the value times 2^-112 (normals and subnormals alike), so a multiply by
// 2^112 restores it; exponent 31 (inf, NaN) instead becomes float exponent 255.
ANCHORAGE_INLINE v16 f16_to_float(const std::uint8_t* p) {
  const u32x16 h = __builtin_convertvector(load<u16x16>(p), u32x16);
  const u32x16 mag = (h & 0x7fffu) << 13;
  const v16 scaled = reinterpret_cast<v16>(mag) * 0x1p112f;
  const u32x16 bits = (h & 0x7c00u) == 0x7c00u ? (mag | 0x7f800000u) : reinterpret_cast<u32x16>(scaled);
  return reinterpret_cast<v16>(bits | ((h & 0x8000u) << 16));
}

ANCHORAGE_INLINE v16 bf16_to_float(const std::uint8_t* p) {
  return reinterpret_cast<v16>(__builtin_convertvector(load<u16x16>(p), u32x16) << 16);
}

// Bit `bit` of each byte, moved to bit 4 (16 when set, else 0) with one shift.
ANCHORAGE_INLINE u8x16 bit_to_16(u8x16 q, int bit) {
  return (bit <= 4 ? q << (4 - bit) : q >> (bit - 4)) & 0x10;
}

// The 64 integers of chunk c (0..3) of a Q4_K or Q5_K super-block (qs: its 128 bytes of nibbles;
// qh0, qh1: a Q5_K's two 16-byte halves of high bits), as four vectors of 16: lo0, lo1 the
// first 32 (sub-block 2c: the low nibbles), hi0, hi1 the next 32 (sub-block 2c + 1: the high
// nibbles), with a Q5_K's fifth bit (16) added.
struct k_chunk {
  u8x16 lo0, lo1, hi0, hi1;
};
template <bool five>
ANCHORAGE_INLINE k_chunk k_values(const std::uint8_t* qs, u8x16 qh0, u8x16 qh1, int c) {
  const u8x16 b0 = load<u8x16>(qs + 32 * c), b1 = load<u8x16>(qs + 32 * c + 16);
  k_chunk q{b0 & 0x0f, b1 & 0x0f, b0 >> 4, b1 >> 4};
  if (five) {
    q.lo0 |= bit_to_16(qh0, 2 * c);
    q.lo1 |= bit_to_16(qh1, 2 * c);
    q.hi0 |= bit_to_16(qh0, 2 * c + 1);
    q.hi1 |= bit_to_16(qh1, 2 * c + 1);
  }
  return q;
}

// The float types' readers: `bytes` per value, 16 values as a vector, one value.
struct as_f32 {
  static constexpr int bytes = 4;
  static ANCHORAGE_INLINE v16 vec(const std::uint8_t* p) { return load<v16>(p); }
  static ANCHORAGE_INLINE float one(const std::uint8_t* p) { return load<float>(p); }
};
struct as_bf16 {
  static constexpr int bytes = 2;
  static ANCHORAGE_INLINE v16 vec(const std::uint8_t* p) { return bf16_to_float(p); }
  static ANCHORAGE_INLINE float one(const std::uint8_t* p) { return bf16_to_f32(u16_at(p)); }
};
struct as_f16 {
  static constexpr int bytes = 2;
  static ANCHORAGE_INLINE v16 vec(const std::uint8_t* p) { return f16_to_float(p); }
  static ANCHORAGE_INLINE float one(const std::uint8_t* p) { return f16_to_f32(u16_at(p)); }
};

}  // namespace anchorage::kernels::cpu::quant_simd
