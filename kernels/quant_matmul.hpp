#pragma once
// A matrix-matrix product over weights kept in their stored type (kernels/weight_type.hpp): the
// form of kernels/quant_matvec.hpp for several activation rows at once (a prefill chunk, a verify
// round, a batched decode).
#include "kernels/weight_type.hpp"

namespace anchorage::kernels::cpu {

// y[i][r] = sum_j W[r][j] * x[i][j] for activation rows i in [0, m) and weight rows r in [0, n),
// where x[i] starts at x + i * ldx (k float32 values), W is n rows of row_bytes(type, k) bytes
// each, back to back at w (no alignment needed), W[r][j] is the value dequantize_row gives, and
// y[i] starts at y + i * ldy (n float32 values). Nothing else of y is written; m = 0 or n = 0
// writes nothing (x, w and y are then not read). k must be a multiple of block_elements(type),
// m, n >= 0, ldx >= k and ldy >= n where more than one row is read or written (asserted). x and
// y must not overlap. Host memory; single-threaded and thread-safe (callers split weight rows or
// activation rows across threads: neither changes any value).
//
// Exactness: every y[i] has the bits quant_matvec(type, n, k, w, x[i], y[i]) gives, whatever m
// and the other rows of x are (so a batch equals each row alone, and any split of the rows
// equals any other). Each output element is summed in quant_matvec's order (stated in
// kernels/quant_matvec.hpp), with the same float operations on the same operands, in every CPU
// clone. The speed comes from decoding each weight block once into registers and multiplying it
// into up to eight activation rows (four for q6_K, whose four lane sets per row fill the
// registers), not from a different order: f32, bf16, f16: two lane sets of 16 per row; q8_0,
// q4_0: one; q4_K, q5_K: two, plus the min term, summed for eight rows in one vector whose lane
// i is row i's running min sum (the same adds in the same order as quant_matvec's scalar);
// q6_K: four. Weight rows are taken in chunks of about 512 KiB so a chunk stays in the cache
// while every group of activation rows passes over it.
void quant_matmul(weight_type type, int m, int n, int k, const float* x, int ldx, const void* w, float* y,
                  int ldy);

}  // namespace anchorage::kernels::cpu
