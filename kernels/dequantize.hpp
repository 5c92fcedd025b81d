#pragma once
// Stored weight rows to float32, written plainly from the formats (kernels/weight_type.hpp).
#include <cstdint>
#include "kernels/weight_type.hpp"

namespace anchorage::kernels {

// dst[0..n) = the n values of the row stored as `type` at src (row_bytes(type, n) bytes, no
// alignment needed). n must be a multiple of block_elements(type) (asserted: callers check with
// row_bytes). Each value is computed with ggml's operations in ggml's order (d * q for q8_0/q4_0,
// (d * sc) * q - (dmin * m) for q4_K/q5_K, (d * sc) * q for q6_K), so it has the bits llama.cpp's
// dequantize_row_* gives. Host memory; thread-safe.
void dequantize_row(weight_type type, const void* src, float* dst, int n);

// The scale and min of 32-value sub-block j (0..7) of a q4_K/q5_K block from its 12 packed
// bytes (ggml's get_scale_min_k4): sub-blocks 0-3 take the low 6 bits of bytes j and j+4;
// sub-blocks 4-7 take their low 4 bits from byte j+4 (scale low nibble, min high nibble) and
// their top 2 bits from the top 2 bits of bytes j-4 (scale) and j (min).
inline void k_scale_min(const std::uint8_t* scales, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4);
    *m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

}  // namespace anchorage::kernels
