#pragma once
// Products of weights kept in a block type by activations rounded to 8 bits: the prefill form of
// the stored products on a CPU with integer dot products (AVX-512 VNNI), as llama.cpp's CPU path
// multiplies quantized weights (it rounds activations to Q8_0 or Q8_K first). The weights are
// read exactly; the activations are rounded once, per block of 32 values of a row.
#include <cstdint>
#include <vector>

#include "kernels/weight_type.hpp"

namespace anchorage::kernels::cpu {

// m activation rows of k values (k a multiple of 32), each block of 32 values of a row rounded
// to 8 bits as llama.cpp's quantize_row_q8_0_ref does: d = max |x| / 127, q = x * (1 / d)
// rounded to nearest, ties away from zero (roundf), q = 0 where d = 0; the scale kept is d rounded
// to a half (Q8_0 stores it so), and c = that scale * (the block's sum of q). s: the exact sum of
// q over each 16 values (each half of a block; Q6_K's offset of 32 is taken off with it). Each
// row's blocks depend on that row alone.
struct q8_activations {
  int m = 0, k = 0;
  std::vector<std::int8_t> q;   // m * k
  std::vector<float> d, c;      // m * k / 32, row-major
  std::vector<std::int16_t> s;  // m * k / 16, row-major
};
// `plain`: the scalar loop, whatever the CPU (the vector form, AVX-512, gives the same bits).
void quantize_activations(int m, int k, const float* x, int ldx, q8_activations& out, bool plain = false);
// The same in parts: `out` sized for m rows of k values, then rows [i0, i1) of x rounded into it
// (rows are independent: any split gives quantize_activations' bits).
void size_activations(int m, int k, q8_activations& out);
void quantize_rows(int i0, int i1, const float* x, int ldx, q8_activations& out, bool plain = false);

// The block types int8_matmul reads: q8_0, q4_0, q4_K and q5_K, whose every block of 32 values is
// A * u + B for bytes u (0..255) and one scale A and offset B (Q8_0: u = q + 128, A = d,
// B = -128 d; Q4_0: u = q, A = d, B = -8 d; Q4_K, Q5_K: u = q, A = d * sc, B = -dmin * m, the
// products dequantize_row forms), and q6_K, whose every 16 values (half h of block g) are
// A_gh * (u - 32) for u = q (0..63) and A_gh = d * scales[2 (g % 8) + h] (the product
// dequantize_row forms). The float types are not.
bool int8_reads(weight_type t);
// Whether this CPU runs the vector form (AVX-512 with VNNI); otherwise int8_matmul computes the
// same bits in plain code, much slower than a float32 product.
bool int8_vectors();

// y[i][r] for activation rows i in [0, x.m) and weight rows r in [0, n): with acc_g the integer
// sum over block g of u_j * q_ij (exact), and A_g, B_g weight row r's for block g,
//   f = 0; for each block g in order: f = fma(float(acc_g) * A_g, d_ig, f); f = fma(B_g, c_ig, f)
// and for q6_K, with acc_gh the integer sum over half h (values 32g + 16h .. 32g + 16h + 15) of
// (u_j - 32) * q_ij (exact) and A_gh as int8_reads states (c unused),
//   f = 0; for each block g in order: f = fma(float(acc_g0) * A_g0, d_ig, f);
//                                     f = fma(float(acc_g1) * A_g1, d_ig, f)
// and y[i][r] = f: fused multiply-adds (correctly rounded, the same on every CPU) and one product,
// so the vector form and the plain one give the same bits, and every output depends only on its
// own activation row and weight row (any split of either gives the same bits). W: n rows of
// row_bytes(type, x.k) bytes back to back at w; y[i] at y + i * ldy, n values, nothing else of y
// written; ldy >= n. `plain` forces the plain code (tests). Single-threaded, thread-safe: each
// thread unpacks weights into a buffer of its own.
void int8_matmul(weight_type type, const q8_activations& x, int n, const void* w, float* y, int ldy,
                 bool plain = false);

}  // namespace anchorage::kernels::cpu
