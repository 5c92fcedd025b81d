#pragma once
#include "kernels/op.hpp"

namespace anchorage::kernels {
// Causal grouped-query attention of m query rows at positions pos0 .. pos0+m-1 over cached
// rows 0 .. pos0+m-1 (the chunk's own K/V rows must already be written).
struct attention_shape {
  int m;
  int pos0;
  int n_q;   // query heads
  int n_kv;  // key/value heads; query head h reads kv head h / (n_q / n_kv)
  int head_dim;
  int q_stride;   // floats between query rows
  int kv_stride;  // floats between cached K (and V) rows
  int o_stride;   // floats between output rows
  float scale;
};
// The CPU kernel works in tiles of query rows by keys.
inline constexpr int attention_row_block = 128;
inline constexpr int attention_key_block = 256;
// The stacked queries and outputs of the query heads sharing one kv head, a running max and sum
// per row, and one score tile. It does not grow with the context.
inline long attention_scratch(const attention_shape& sh) {
  const long rows = static_cast<long>(sh.m) * (sh.n_q / sh.n_kv);
  return 2 * rows * sh.head_dim + 2 * rows + static_cast<long>(attention_row_block) * attention_key_block;
}
}  // namespace anchorage::kernels

// o[i][h] = softmax_j<=pos0+i (scale * q[i][h] . K[j][kvh]) . V[j][kvh]
// Keys past a row's position take no part. scratch: attention_scratch(shape) floats.
ANCHORAGE_OP(void, attention,
             (const float* q, const float* k, const float* v, float* o,
              const anchorage::kernels::attention_shape& shape, float* scratch))
