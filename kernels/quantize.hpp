#pragma once
// Float32 rows to a stored weight type (kernels/weight_type.hpp): round-to-nearest quantizers for
// tests and a future exporter. Deterministic (the same input gives the same bytes) and plain
// scalar code; not a hot path.
#include <cstdint>
#include "kernels/weight_type.hpp"

namespace anchorage::kernels {

// The row_bytes(type, n) bytes at dst = src[0..n) stored as `type`. n must be a multiple of
// block_elements(type) (asserted: callers check with row_bytes). Host memory; thread-safe.
//
//  - f32: copied. f16, bf16: f32_to_f16 / f32_to_bf16 below.
//  - q8_0, q4_0: ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref, byte for byte: q8_0
//    d = amax / 127, q = roundf(x / d) (1/d from the unrounded d); q4_0 d = max / -8 (max the
//    signed value of largest magnitude, the first one on ties), q = min(15, trunc(x / d + 8.5)).
//  - q4_K, q5_K: quantize_row_q4_K_ref / quantize_row_q5_K_ref with make_qkx2_quants cut to its
//    first candidate: each 32-value sub-block's scale is 1 / (nmax / (max - min)) and its min
//    -min, with min = min(0, smallest value), max the largest and nmax 15 (31 for q5_K), and
//    q = nearest((x - min) / scale); no weighted (av_x + |x|) search over nstep rescaled candidates
//    and no least-squares refit of scale and min. What follows is the reference's: the eight
//    scales and mins quantized to 6 bits against their maxima (d = max scale / 63, dmin = max
//    min / 63), packed as get_scale_min_k4 reads them, and every q recomputed from the stored fp16
//    d, dmin and 6-bit values, clamped to 0..nmax.
//  - q6_K: quantize_row_q6_K_ref with make_qx_quants taken at rmse_type 0: each 16-value
//    sub-block's scale is max / -32 (max the signed value of largest magnitude, so it maps to
//    q = -32 exactly), no search over the 18 rescaled candidates and no least-squares refit. What
//    follows is the reference's: d = max scale / -128, int8 scales nearest(scale / d) (at most
//    127), q recomputed from the stored d and scale, clamped to -32..31.
// nearest() rounds ties to even, as ggml's nearest_int. A block whose values are all zero gets
// zero scales (its values dequantize to 0).
void quantize_row(weight_type type, const float* src, void* dst, int n);

// Round to nearest, ties to even; values past the largest finite half (65504 and what rounds
// above it) become infinity; NaN stays NaN, made quiet, sign and top payload bits kept (as the
// F16C instruction does). Subnormal halves are produced, not flushed.
std::uint16_t f32_to_f16(float f);

// Round to nearest, ties to even (as ggml_compute_fp32_to_bf16); NaN stays NaN, made quiet
// (bit 6 of the half set), sign and payload top bits kept.
std::uint16_t f32_to_bf16(float f);

}  // namespace anchorage::kernels
