#include "kernels/device.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

// The host side of kernels/device.hpp. With ANCHORAGE_HAVE_CUDA the cuda branch lives in
// kernels/cuda/device.cu; without it a cuda request is a programmer error (cuda_available()
// is false, so callers never ask).
namespace anchorage::kernels {

namespace detail {
void* cuda_alloc_managed(std::size_t bytes);
void cuda_free(void* p);
void cuda_sync();
bool cuda_present();
std::string cuda_name();
}  // namespace detail

bool cuda_available() { return detail::cuda_present(); }
std::string cuda_device_name() { return detail::cuda_name(); }

void* device_alloc(backend b, std::size_t bytes) {
  if (b == backend::cuda) return detail::cuda_alloc_managed(bytes);
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return p;
}

void device_free(backend b, void* p) {
  if (p == nullptr) return;
  if (b == backend::cuda) return detail::cuda_free(p);
  std::free(p);
}

void device_sync(backend b) {
  if (b == backend::cuda) detail::cuda_sync();
}

}  // namespace anchorage::kernels
