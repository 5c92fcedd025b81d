#pragma once
// The two GELUs of the vision encoder, in place.
#include <cstddef>

namespace anchorage {

// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): PyTorch's GELU(approximate="tanh"),
// Hugging Face's "gelu_pytorch_tanh" (the blocks' MLP).
void vision_gelu_tanh(float* x, std::size_t n);

// 0.5 x (1 + erf(x / sqrt 2)): PyTorch's nn.GELU() (the merger).
void vision_gelu_erf(float* x, std::size_t n);

}  // namespace anchorage
