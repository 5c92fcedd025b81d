#pragma once
// The types a weight row may be stored in, as GGUF files store them (ggml's `enum ggml_type`,
// block layouts from ggml-common.h; docs: ../shared/reference/model-formats.md section 1).
//
// A row of n values is n / block_elements(t) blocks of block_bytes(t) bytes, back to back; the
// block types need n to be a multiple of their block (32 for q8_0/q4_0, 256 for the K types).
// All fields are little-endian; f16 is IEEE binary16, bf16 the top half of a binary32.
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

namespace anchorage::kernels {

enum class weight_type { f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k };

struct weight_type_info {
  std::uint32_t ggml_id;  // GGML_TYPE_* in ggml.h
  const char* name;       // as llama.cpp prints it (ggml_type_name): "f32", "q4_K", ...
  int block_elements;     // values per block (1 for the float types)
  int block_bytes;        // bytes per block
};

constexpr weight_type_info info(weight_type t) {
  switch (t) {
    case weight_type::f32:
      return {0, "f32", 1, 4};
    case weight_type::f16:
      return {1, "f16", 1, 2};
    case weight_type::bf16:
      return {30, "bf16", 1, 2};
    case weight_type::q8_0:
      return {8, "q8_0", 32, 34};  // d fp16, qs[32] int8
    case weight_type::q4_0:
      return {2, "q4_0", 32, 18};  // d fp16, qs[16] nibbles
    case weight_type::q4_k:
      return {12, "q4_K", 256, 144};  // d, dmin fp16, scales[12], qs[128]
    case weight_type::q5_k:
      return {13, "q5_K", 256, 176};  // d, dmin fp16, scales[12], qh[32], qs[128]
    case weight_type::q6_k:
      return {14, "q6_K", 256, 210};  // ql[128], qh[64], scales[16] int8, d fp16 (last)
  }
  return {0, "?", 1, 0};  // not reached: every enumerator is handled above
}

constexpr std::uint32_t ggml_type_id(weight_type t) { return info(t).ggml_id; }
constexpr const char* weight_type_name(weight_type t) { return info(t).name; }
constexpr int block_elements(weight_type t) { return info(t).block_elements; }
constexpr int block_bytes(weight_type t) { return info(t).block_bytes; }

// The bytes of a row of n values; nullopt for a negative n, a byte count past 2^63, or an n that
// is not a multiple of the type's block (a tensor whose ne0 does not fill its blocks cannot be stored in that
// type).
constexpr std::optional<std::int64_t> row_bytes(weight_type t, std::int64_t n) {
  const weight_type_info i = info(t);
  if (n < 0 || n % i.block_elements != 0) return std::nullopt;
  if (n / i.block_elements > std::numeric_limits<std::int64_t>::max() / i.block_bytes) return std::nullopt;
  return n / i.block_elements * i.block_bytes;
}

// The type with GGML_TYPE_* number `id`; nullopt for any other number (a type this code does not
// read: Q4_1, Q5_0, the IQ types, a retired or unknown id), so a loader can refuse it by number.
constexpr std::optional<weight_type> weight_type_from_ggml(std::uint32_t id) {
  for (weight_type t : {weight_type::f32, weight_type::f16, weight_type::bf16, weight_type::q8_0,
                        weight_type::q4_0, weight_type::q4_k, weight_type::q5_k, weight_type::q6_k})
    if (info(t).ggml_id == id) return t;
  return std::nullopt;
}

// The two 16-bit float formats, decoded exactly (every value of either is a float value:
// subnormals, -0.0, infinities and NaN payloads kept). The encoders, which round, are in
// kernels/quantize.hpp.
inline float bf16_to_f32(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf, or NaN with its payload
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // rebias 15 -> 127
  } else {
    // Zero or subnormal: mant * 2^-24, exact in float.
    float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    std::memcpy(&bits, &f, sizeof bits);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace anchorage::kernels
