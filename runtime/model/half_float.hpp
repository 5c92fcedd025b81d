#pragma once
// IEEE binary16 (F16) and bfloat16 (BF16) to and from float32, as safetensors stores them.
#include <cstdint>

namespace anchorage {

// Exact for every input: every half value is a float value (subnormals normalised, inf and NaN
// payloads kept).
float f16_to_float(std::uint16_t h);
float bf16_to_float(std::uint16_t h);

// Round to nearest, ties to even. Finite values past the largest half round to infinity; NaN stays
// NaN (quiet, sign kept). float -> half -> float is the identity on values that are halves.
std::uint16_t float_to_f16(float f);
std::uint16_t float_to_bf16(float f);

}  // namespace anchorage
