#pragma once
#include "kernels/gdn_shape.hpp"
#include "kernels/op.hpp"
// The gated delta rule in its chunked (WY / UT-transform) form, as used for prefill.
// Tokens are taken in sub-chunks of shape.chunk rows counted from row 0 (the last may be short).
// Within a sub-chunk with cumulative log decay G_i (i = 0..C-1) and initial state S:
//   A      = strictly-lower( -(beta_i k_i . k_j) exp(G_i - G_j) ),  T = (I - A')^-1 by forward
//            substitution (A' the recursion in fla's chunk_gated_delta_rule reference)
//   U      = T (beta * v),   W = T (beta * exp(G) * k)
//   Vn     = U - W S
//   o_i    = exp(G_i) q_i S + sum_{j<=i} exp(G_i - G_j) (q_i . k_j) Vn_j
//   S     <- exp(G_last) S + sum_j exp(G_last - G_j) k_j Vn_j^T
// (q scaled by shape.scale). The state is updated in place. scratch: gdn_chunk_scratch(shape) floats.
ANCHORAGE_OP(void, gdn_chunk,
             (const float* qkv, const float* g, const float* beta, float* s, float* o,
              const anchorage::kernels::gdn_shape& shape, float* scratch))

namespace anchorage::kernels {
inline long gdn_chunk_scratch(const gdn_shape& sh) {
  const long c = sh.chunk;
  // T and QK (c*c each), VB/U, Vn and QS (c*dv each), KB/W and Kd (c*dk each), decays (c),
  // reused head after head.
  return 2 * c * c + 3 * c * sh.dv + 2 * c * sh.dk + c;
}
}  // namespace anchorage::kernels
