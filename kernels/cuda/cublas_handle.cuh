#pragma once
#include <cublas_v2.h>

namespace anchorage::kernels::cuda_impl {

// The process-wide cuBLAS handle used by cuda:: ops, created on first use (thread-safe) on the
// current device: default (legacy) stream, CUBLAS_PEDANTIC_MATH (no TF32, no reduced-precision
// shortcuts), no atomics. Never destroyed (it would outlive the CUDA runtime at exit).
// Throws std::runtime_error when it cannot be created.
cublasHandle_t cublas_handle();

}  // namespace anchorage::kernels::cuda_impl
