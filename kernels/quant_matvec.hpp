#pragma once
// A matrix-vector product over weights kept in their stored type (kernels/weight_type.hpp).
#include "kernels/weight_type.hpp"

namespace anchorage::kernels::cpu {

// y[r] = sum_j W[r][j] * x[j] for r in [0, rows), where W is `rows` rows of row_bytes(type, k)
// bytes each, back to back at w (no alignment needed), and W[r][j] is the value dequantize_row
// gives. x and y are float32; x is used as it is (not rounded to 8 or 16 bits, as llama.cpp's
// CPU path rounds it) and every sum is float32. k must be a multiple of block_elements(type)
// (asserted). Host memory; single-threaded and thread-safe (callers split rows across threads:
// a row's result does not depend on the other rows). The CUDA form comes later.
//
// Order of the sums, fixed, so the same inputs give the same bits run after run:
//  - f32, bf16, f16: sixteen lane sums over the values in order (value j goes to lane j % 16,
//    alternating between two sets of lanes every 16 values, the sets added at the end), then
//    the lanes added in order, then the values past the last multiple of 16 one by one;
//  - block types: per block (per 32-value sub-block for q4_K/q5_K, per 16 for q6_K) sixteen lane
//    sums of q * x with the integer q, scaled by the block's float scale and added into sixteen
//    running lanes (one set; two for q4_K/q5_K, even and odd sub-blocks; four for q6_K, one per
//    quarter of each half), the sets added in a fixed tree and the lanes in order at the end.
//    q4_K/q5_K take the mins apart: y = lanes - sum over sub-blocks, in order, of
//    (dmin * m) * (the sub-block's sum of x, added in order).
// The code is written once in GCC vector types and compiled per CPU (avx512f, avx2, default:
// target_clones) with contraction off, so no fused multiply-add is formed; vector lanes are
// independent IEEE operations, so every clone gives the same bits (checked by building each
// clone alone over 4096 x 4096 rows of every type). The result differs from dequantize_row
// followed by a float dot product in order by rounding only: tests/kernels/test_quant_blocks.cpp
// holds it within 1e-5 * sum_j |W[r][j] x[j]| (for q4_K/q5_K plus 2 * sum_j |dmin m| |x[j]|, the
// separated min terms) of a double-precision dot product; on random data it is within ~4e-8.
void quant_matvec(weight_type type, int rows, int k, const void* w, const float* x, float* y);

}  // namespace anchorage::kernels::cpu
