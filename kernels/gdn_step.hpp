#pragma once
#include "kernels/gdn_shape.hpp"
#include "kernels/op.hpp"
// The gated delta rule one token at a time (decode), for shape.tokens rows in order:
//   S <- exp(g) S;  d = beta (v - S^T k);  S <- S + k d^T;  o = S^T (scale q)
// shape.chunk is ignored. The state is updated in place.
ANCHORAGE_OP(void, gdn_step,
             (const float* qkv, const float* g, const float* beta, float* s, float* o,
              const anchorage::kernels::gdn_shape& shape))
