#pragma once
// Private to the engine: the products by a weight matrix and the embedding lookup, over float32
// weights (the ops table: BLAS gemm, or gemm_rows for a decode batch, bit for bit what the engine
// always ran) or weights kept as stored (kernels::cpu::quant_matmul, cpu backend only).
// On the cpu backend every product is shared out across one pool of threads, the machine's cores
// (--threads), and BLAS runs on one thread: a float32 weight's row form (one row, a decode batch)
// by weight rows, each output's bits from its own weight row and input row alone; its prefill form
// by panels of 256 weight rows, each one gemm, so the seams do not move with the thread count
// (OpenBLAS's own threads give other bits on some cores). The bits are the same on any --threads.
//
// Weights kept as stored, the row form (`rows_kernel`, or fewer than 32 rows): every output row
// has the bits quant_matvec gives it, whatever the other rows and however the weight rows are
// split, so a verify round, a decode step and a decode batch agree bit for bit on each row they
// share, and the weight rows are split across the machine's cores (a pool of threads, one product at a time;
// a second caller while it is busy runs its product on its own thread; so does a child of fork(), which has
// none of the pool's threads). The prefill form (32 rows or more, not `rows_kernel`): the weight rows are
// dequantized 128 at a time to float32 and multiplied by the ops table's gemm, so a chunk costs
// about what float32 weights cost and its bits depend only on its rows, as BLAS's do (a resumed
// prefill runs a cold one's chunks). Under product_activations::q8 (compute_threads.hpp), the
// block types kernels::cpu::int8_reads names take neither: in both forms the rows are rounded to
// 8 bits once and multiplied as integers (kernels::cpu::int8_matmul) in panels of 16 weight rows
// shared out across the pool, every output from its own row and weight row alone. A GGUF's tiled value heads
// (stored_weight.hpp) are permuted on the floats before or after the product.
#include <cstdint>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/int8_matmul.hpp"
#include "kernels/ops.hpp"
#include "runtime/engine/device_buffer.hpp"
#include "runtime/engine/engine_weights.hpp"

namespace anchorage {

// Buffers a product needs for a permuted input or an accumulated output; one per engine.
struct linear_scratch {
  std::vector<float> in, out;
  bool q8 = false;  // product_activations::q8, as the engine was built (its fingerprint's)
  kernels::cpu::q8_activations q8_rows;  // the rows rounded to 8 bits
};

// y[m x n] = x[m x kd] W^T, plus y when beta is 1 (a residual); beta is 0 or 1. W is n x kd.
// `rows_kernel`: a decode batch's float32 product (gemm_rows) rather than gemm.
void linear(const kernels::ops& k, bool rows_kernel, int m, int n, int kd, const float* x, int ldx,
            const linear_weight& w, float beta, float* y, int ldy, linear_scratch& s);

// One layer's attention (kernels::attention) of `sh`'s rows: on the cpu backend its kv heads are
// shared out across the pool, a call per head, each with its own part of `scratch` (grown to one
// head's scratch per head). A head's stacked queries, tiles and sums are the same whichever
// thread runs it and whatever the other heads are, so the bits are those of one call over every
// head, on any --threads. On cuda: one call.
void attention_by_heads(const kernels::ops& k, const float* q, const float* keys, const float* values,
                        float* o, const kernels::attention_shape& sh, device_buffer& scratch);

// out[i] = row ids[i] of the table W (m rows of `dim` floats).
void embed_rows(const kernels::ops& k, const std::int32_t* ids, const linear_weight& w, float* out, int m,
                int dim);

}  // namespace anchorage
