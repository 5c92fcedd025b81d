#include "runtime/model/half_float.hpp"

#include <cstring>

namespace anchorage {
namespace {

float float_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

// `value` >> `shift` rounded to nearest, ties to even (1 <= shift <= 31).
std::uint32_t shift_round_even(std::uint32_t value, unsigned shift) {
  const std::uint32_t kept = value >> shift;
  const std::uint32_t rest = value & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u) != 0)) ? 1u : 0u);
}

}  // namespace

float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return float_from_bits(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return float_from_bits(sign);
    // Subnormal: mant * 2^-24. Shift until the implicit bit (0x400) is set.
    std::uint32_t shift = 0;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      ++shift;
    }
    return float_from_bits(sign | ((113u - shift) << 23) | ((mant & 0x3ffu) << 13));
  }
  return float_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

// bfloat16 is the top half of a binary32.
float bf16_to_float(std::uint16_t h) { return float_from_bits(static_cast<std::uint32_t>(h) << 16); }

std::uint16_t float_to_f16(float f) {
  std::uint32_t x = bits_of(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u)  // inf, or NaN made quiet with the top payload bits kept
    return static_cast<std::uint16_t>(sign | 0x7c00u |
                                      (x > 0x7f800000u ? 0x200u | ((x >> 13) & 0x3ffu) : 0u));
  if (x >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (x < 0x38800000u) {                                                    // below 2^-14: subnormal
    if (x < 0x33000000u) return sign;                                       // below 2^-25: zero
    const std::uint32_t e = x >> 23;                                        // 102..112
    const std::uint32_t m = (x & 0x7fffffu) | 0x800000u;
    return static_cast<std::uint16_t>(sign | shift_round_even(m, 126u - e));  // m * 2^(e-150) * 2^24
  }
  // Normal: rebias the exponent (127 -> 15); a rounding carry moves into the exponent correctly.
  return static_cast<std::uint16_t>(sign | shift_round_even(x - 0x38000000u, 13));
}

std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>(shift_round_even(x, 16));
}

}  // namespace anchorage
