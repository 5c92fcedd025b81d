#pragma once
// LayerNorm over the last dimension, as PyTorch's nn.LayerNorm (biased variance, eps inside the
// square root, an elementwise weight and bias).
namespace anchorage {

// y[r] = (x[r] - mean(x[r])) / sqrt(var(x[r]) + eps) * weight + bias for each of `rows` rows of
// `width` floats. Mean and variance are accumulated in double. y may equal x.
void vision_layer_norm(const float* x, int rows, int width, const float* weight, const float* bias, float eps,
                       float* y);

}  // namespace anchorage
