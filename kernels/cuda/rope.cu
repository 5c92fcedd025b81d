#include "kernels/rope.hpp"

#include "kernels/cuda/rope_rows.cuh"

namespace anchorage::kernels::cuda {
namespace {

// Row r is at position pos0 + r, every frequency pair alike.
struct consecutive_pos {
  int pos0;
  __device__ double operator()(int r, int) const { return static_cast<double>(pos0 + r); }
};

}  // namespace

void rope(float* x, int stride, int rows, int heads, int head_dim, int rot_dims, int pos0, float base) {
  cuda_impl::launch_rope_rows(x, stride, rows, heads, head_dim, rot_dims, base, consecutive_pos{pos0});
}

}  // namespace anchorage::kernels::cuda
