// vision_cuda::position_add; see vision_ops.hpp.
#include "runtime/vision/cuda/vision_ops.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::vision_cuda {
namespace {

// One thread per element of x: its patch's four taps summed in the CPU's order, then added.
__global__ void position_add_kernel(float* x, long total, int per_frame, int hidden, const float* table,
                                    const position_taps* taps) {
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % hidden);
    const position_taps& t = taps[(idx / hidden) % per_frame];
    const float pos = t.weight[0] * table[static_cast<long>(t.row[0]) * hidden + i] +
                      t.weight[1] * table[static_cast<long>(t.row[1]) * hidden + i] +
                      t.weight[2] * table[static_cast<long>(t.row[2]) * hidden + i] +
                      t.weight[3] * table[static_cast<long>(t.row[3]) * hidden + i];
    x[idx] += pos;
  }
}

}  // namespace

void position_add(float* x, int frames, int per_frame, int hidden, const float* table,
                  const position_taps* taps) {
  const long total = static_cast<long>(frames) * per_frame * hidden;
  if (total <= 0) return;
  const int threads = kernels::cuda_impl::kElementThreads;
  position_add_kernel<<<kernels::cuda_impl::grid_for(total, threads), threads>>>(x, total, per_frame, hidden,
                                                                                 table, taps);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::vision_cuda
