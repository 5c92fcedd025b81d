#pragma once
#include <cstddef>
#include <string>

namespace anchorage::kernels {

// Where the engine's arithmetic runs. cpu is the default and what CI runs.
enum class backend { cpu, cuda };

// True when the CUDA kernels were built and a device is present.
bool cuda_available();
// Name of the device used by cuda:: ops ("" without one).
std::string cuda_device_name();

// Memory every op of `b` can read and write, also addressable from the host (CUDA managed
// memory on cuda, aligned host memory on cpu). Zero-filled. Throws std::bad_alloc on failure.
void* device_alloc(backend b, std::size_t bytes);
void device_free(backend b, void* p);
// Waits until queued work on `b` is done (no-op on cpu).
void device_sync(backend b);

}  // namespace anchorage::kernels
