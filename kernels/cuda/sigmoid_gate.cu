#include "kernels/sigmoid_gate.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

__global__ void sigmoid_gate_kernel(float* x, int x_stride, const float* gate, int gate_stride, int rows,
                                    int dim) {
  const long total = static_cast<long>(rows) * dim;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const long r = idx / dim;
    const long i = idx % dim;
    x[r * x_stride + i] *= 1.0f / (1.0f + expf(-gate[r * gate_stride + i]));
  }
}

}  // namespace

void sigmoid_gate(float* x, int x_stride, const float* gate, int gate_stride, int rows, int dim) {
  const long total = static_cast<long>(rows) * dim;
  if (total <= 0) return;
  const int threads = cuda_impl::kElementThreads;
  sigmoid_gate_kernel<<<cuda_impl::grid_for(total, threads), threads>>>(x, x_stride, gate, gate_stride, rows,
                                                                        dim);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
