// Linked only when the CUDA kernels are not built: no device is ever available.
#include <cstdlib>
#include <new>
#include <string>

namespace anchorage::kernels::detail {
bool cuda_present() { return false; }
std::string cuda_name() { return {}; }
void* cuda_alloc_managed(std::size_t) { throw std::bad_alloc(); }
void cuda_free(void*) { std::abort(); }
void cuda_sync() {}
}  // namespace anchorage::kernels::detail
