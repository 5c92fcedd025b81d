#pragma once
// Error checking for the CUDA backend: CUDA_CHECK / CUBLAS_CHECK throw std::runtime_error
// naming the failed call, the file and line, and the library's error string.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace anchorage::kernels::cuda_impl {

[[noreturn]] inline void throw_failure(const char* library, const char* call, const char* file, int line,
                                       const char* message) {
  throw std::runtime_error(std::string(library) + " call failed: " + call + " at " + file + ":" +
                           std::to_string(line) + ": " + (message != nullptr ? message : "?"));
}

}  // namespace anchorage::kernels::cuda_impl

#define CUDA_CHECK(call)                                                                       \
  do {                                                                                         \
    const cudaError_t anchorage_cuda_err_ = (call);                                            \
    if (anchorage_cuda_err_ != cudaSuccess)                                                    \
      ::anchorage::kernels::cuda_impl::throw_failure("CUDA", #call, __FILE__, __LINE__,        \
                                                     cudaGetErrorString(anchorage_cuda_err_)); \
  } while (0)

#define CUBLAS_CHECK(call)                                                                         \
  do {                                                                                             \
    const cublasStatus_t anchorage_cublas_st_ = (call);                                            \
    if (anchorage_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::anchorage::kernels::cuda_impl::throw_failure("cuBLAS", #call, __FILE__, __LINE__,          \
                                                     cublasGetStatusString(anchorage_cublas_st_)); \
  } while (0)
