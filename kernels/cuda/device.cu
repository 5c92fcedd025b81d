// The CUDA half of kernels/device.hpp (see kernels/cpu/device.cpp), the shared cuBLAS handle and
// the stream-ordered scratch allocator of the CUDA kernels.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cublas_handle.cuh"

namespace anchorage::kernels::detail {

bool cuda_present() {
  // cudaGetDeviceCount returns an error (and prints nothing) without a driver or a device.
  static const bool present = [] {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // leave no error behind for later checks
      return false;
    }
    return n > 0;
  }();
  return present;
}

std::string cuda_name() {
  static const std::string name = []() -> std::string {
    if (!cuda_present()) return {};
    int dev = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return {};
    }
    return std::string(prop.name);
  }();
  return name;
}

void* cuda_alloc_managed(std::size_t bytes) {
  const std::size_t n = bytes == 0 ? 1 : bytes;  // cudaMallocManaged rejects 0 bytes
  void* p = nullptr;
  if (cudaMallocManaged(&p, n, cudaMemAttachGlobal) != cudaSuccess || p == nullptr) {
    (void)cudaGetLastError();
    throw std::bad_alloc();
  }
  if (cudaMemset(p, 0, n) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    (void)cudaFree(p);
    (void)cudaGetLastError();
    throw std::bad_alloc();
  }
  return p;
}

void cuda_free(void* p) {
  // Called from destructors: never throws. cudaFree waits for queued work using p.
  if (p == nullptr) return;
  if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
}

void cuda_sync() { CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace anchorage::kernels::detail

namespace anchorage::kernels::cuda_impl {

cublasHandle_t cublas_handle() {
  static const cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(cublasSetStream(h, nullptr));  // the default stream, like every cuda:: op
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
    CUBLAS_CHECK(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));
    CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    return h;
  }();
  return handle;
}

namespace {

bool memory_pools() {
  static const bool supported = [] {
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&v, cudaDevAttrMemoryPoolsSupported, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    if (v != 0) {
      // Keep up to 256 MiB of freed scratch in the pool across synchronisations, so ops called
      // back to back do not map and unmap memory every time.
      cudaMemPool_t pool;
      if (cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
        std::uint64_t keep = 256ull << 20;
        (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
      }
      (void)cudaGetLastError();
    }
    return v != 0;
  }();
  return supported;
}

}  // namespace

void* stream_alloc(std::size_t bytes) {
  void* p = nullptr;
  const std::size_t n = bytes == 0 ? 1 : bytes;
  if (memory_pools())
    CUDA_CHECK(cudaMallocAsync(&p, n, nullptr));
  else
    CUDA_CHECK(cudaMalloc(&p, n));
  return p;
}

void stream_free(void* p) noexcept {
  if (p == nullptr) return;
  const cudaError_t err = memory_pools() ? cudaFreeAsync(p, nullptr) : cudaFree(p);
  if (err != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace anchorage::kernels::cuda_impl
