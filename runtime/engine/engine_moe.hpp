#pragma once
// Private to the engine: the mixture-of-experts MLP of the Qwen3.5 MoE layout
// (transformers' Qwen3_5MoeSparseMoeBlock, llama.cpp's qwen35moe build_moe_ffn with softmax gating
// and normalised weights, docs/QWEN35.md), shared by a prefill chunk (engine_forward.cpp) and a
// decode batch or verify round (engine_batch.cpp):
//   1. router logits = x W_router^T over the n_experts, softmax in float32 over all of them;
//   2. the experts_used largest probabilities (the lower index first on a tie), each divided by
//      their sum;
//   3. each chosen expert's SwiGLU MLP on the row, scaled by its weight, summed over the chosen
//      experts in ascending expert order;
//   4. plus the shared expert's SwiGLU MLP scaled by sigmoid(x . shared_expert_gate);
//   5. added to the residual.
// Rows are grouped by expert, one product per expert over the rows routed to it. Each row's sum
// runs in the same order whatever the other rows route to, so with row-invariant products
// (gemm_rows, the stored kernels) a row has the same bits alone or in a batch; a prefill chunk
// groups the same rows whenever it runs the same chunk.
#include <string>
#include <vector>

#include "kernels/ops.hpp"
#include "runtime/engine/engine_linear.hpp"
#include "runtime/engine/engine_weights.hpp"

namespace anchorage {

// The buffers one engine's MoE blocks reuse (host memory: the cpu backend).
struct moe_scratch {
  std::vector<float> logits, in, proj, mix, out, acc, shared, gate;
  std::vector<int> rows, chosen;
  std::vector<float> weight;
};

// The routing of m rows: for row r, chosen[r * used + j] and weight[r * used + j], j < used, the
// chosen experts in ascending order and their renormalised weights. `logits` is [m x n_experts].
void moe_route(const float* logits, int m, int n_experts, int used, int* chosen, float* weight);

// xs[m x d] += moe(xn) for the block whose weights are under `prefix` ("layers.3.moe."); xn is the
// post-attention norm of xs. `rows_kernel`: a decode batch's products (engine_linear.hpp).
void moe_block(const kernels::ops& k, bool rows_kernel, const engine_weights& w, const std::string& prefix,
               int m, const float* xn, float* xs, moe_scratch& s, linear_scratch& ls);

}  // namespace anchorage
