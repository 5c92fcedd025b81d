#pragma once
// The vector helpers the CPU kernels over stored weight types share (quant_matvec.cpp,
// quant_matmul.cpp): GCC vector types, loads that make no alignment claim, and exact conversions
// of bytes, halves and bfloat16s to floats, in the forms GCC 12 vectorises. Internal to
// kernels/cpu: a kernel's .cpp includes it before its own code, since its pragmas (no -Wpsabi
// warning, no fused multiply-add) hold for the rest of the file.
#include <cstdint>

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

}  // namespace anchorage::kernels::cpu::quant_simd
