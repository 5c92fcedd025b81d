#pragma once
#include "kernels/op.hpp"
// Short causal depthwise convolution with SiLU, over `rows` consecutive tokens.
// x: [rows][channels] input (row stride `channels`); w: [channels][ksize], tap ksize-1 multiplies
// the current token; tail: [ksize-1][channels], the inputs of the ksize-1 tokens before row 0
// (oldest first), updated in place to the last ksize-1 inputs; y: [rows][channels],
// y = silu(sum_j w[c][j] * in[t - (ksize-1) + j][c]), summed in order j = 0..ksize-1.
// x and y must not alias.
ANCHORAGE_OP(void, causal_conv1d,
             (const float* x, const float* w, float* tail, float* y, int rows, int channels, int ksize))
