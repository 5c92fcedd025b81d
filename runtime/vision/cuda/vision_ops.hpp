#pragma once
// The vision encoder's ops on a CUDA device, one .cu file each beside this header, each the CUDA
// form of a CPU op of runtime/vision (named below) with the same arguments and the same math.
// Compiled only with ANCHORAGE_HAVE_CUDA (runtime/vision/CMakeLists.txt). Conventions, as
// kernels/op.hpp's cuda:: ops:
//  - float32, row-major; pointers are device (or CUDA managed) memory unless a comment says host;
//  - an op returns once its work is queued on the default stream (a synchronising copy or
//    kernels::device_sync waits); a failed launch throws std::runtime_error (CUDA_CHECK);
//  - deterministic: fixed reduction trees, no atomics; cuBLAS through kernels::cuda::gemm (its
//    handle: pedantic math, no TF32, no atomics).
// This header includes no CUDA header: plain C++ (the tests) can call the ops.
#include <cstddef>

#include "runtime/vision/vision_positions.hpp"

namespace anchorage::vision_cuda {

// vision_linear (vision_linear.hpp): y[rows, out] = x[rows, in] weight^T + bias, weight [out, in];
// `bias` may be nullptr; with `accumulate` the result is added to y. The bias is laid down (or
// added) first, then one cuBLAS sgemm with beta = 1, as the CPU does. x and y must not overlap.
void linear(const float* x, int rows, int in, const float* weight, const float* bias, int out, float* y,
            bool accumulate = false);

// vision_layer_norm (vision_layer_norm.hpp): one block per row, mean and variance accumulated in
// double (a fixed tree over the block). y may equal x.
void layer_norm(const float* x, int rows, int width, const float* weight, const float* bias, float eps,
                float* y);

// vision_gelu_tanh and vision_gelu_erf (vision_gelu.hpp), in place over n floats.
void gelu_tanh(float* x, std::size_t n);
void gelu_erf(float* x, std::size_t n);

// The rotary of vision_attention (apply_vision_rotary, vision_positions.hpp) on the q and k parts
// of n qkv rows (3 * heads * head_dim floats each): row p's heads rotate by row p of `cos` and
// `sin` (n rows of head_dim / 2 floats, make_vision_rotary's tables copied to the device).
void rotary(float* qkv, int n, int heads, int head_dim, const float* cos, const float* sin);

// vision_attention (vision_attention.hpp) over one frame of n qkv rows: rotary() in place, then
// per head and per tile of up to `query_tile` queries: scores = head_dim^-0.5 q k^T (sgemm), a
// softmax per row (max and exp in float, the sum in double, then times the float 1 / sum), out =
// scores v (sgemm). `scores` holds query_tile * n floats; query_tile >= 1.
void attention(float* qkv, int n, int heads, int head_dim, const float* cos, const float* sin, float* out,
               float* scores, int query_tile);

// The position-table add of encode_image (interpolate_position_table, vision_positions.hpp, then
// added to every frame): for each of `frames` frames of `per_frame` rows of `hidden` floats in x,
// row p += sum over k of taps[p].weight[k] * table[taps[p].row[k]], the taps from
// position_table_taps copied to the device (per_frame of them), `table` the position table.
void position_add(float* x, int frames, int per_frame, int hidden, const float* table,
                  const position_taps* taps);

}  // namespace anchorage::vision_cuda
