#include "kernels/ops.hpp"

#include <cblas.h>

#include <cassert>

extern "C" char* openblas_get_config(void);

namespace anchorage::kernels {
namespace {

#define ANCHORAGE_TABLE(ns)                                                                              \
  ops {                                                                                                  \
    backend::ns, &ns::gemm, &ns::rmsnorm, &ns::gated_rmsnorm, &ns::rope, &ns::sigmoid_gate, &ns::swiglu, \
        &ns::causal_conv1d, &ns::l2norm, &ns::gdn_gates, &ns::gdn_chunk, &ns::gdn_step, &ns::attention,  \
        &ns::embed, &ns::add, &ns::block_checksum, &ns::gemm_rows, &ns::rope_multi                       \
  }

}  // namespace

const ops& ops_for(backend b) {
  static const ops cpu_ops = ANCHORAGE_TABLE(cpu);
#ifdef ANCHORAGE_HAVE_CUDA
  static const ops cuda_ops = ANCHORAGE_TABLE(cuda);
  if (b == backend::cuda) {
    assert(cuda_available());
    return cuda_ops;
  }
#else
  assert(b == backend::cpu);
#endif
  return cpu_ops;
}

std::string arithmetic_flags(backend b) {
  std::string s = b == backend::cuda ? "cuda+cublas;" + cuda_device_name() : "cpu";
  s += ";f32;no-fast-math;openblas:";
  s += openblas_get_config();
  return s;
}

}  // namespace anchorage::kernels
