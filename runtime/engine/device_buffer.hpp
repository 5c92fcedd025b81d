#pragma once
#include <cstddef>
#include <utility>

#include "kernels/device.hpp"

namespace anchorage {

// Floats in memory every op of one backend can use (kernels::device_alloc), zero-filled.
// Move-only. grow_to() keeps nothing: it is for scratch.
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(kernels::backend b, std::size_t floats) : where_(b) { allocate(floats); }
  ~device_buffer() { kernels::device_free(where_, ptr_); }
  device_buffer(device_buffer&& o) noexcept { swap(o); }
  device_buffer& operator=(device_buffer&& o) noexcept {
    swap(o);
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  float* data() { return ptr_; }
  const float* data() const { return ptr_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(float); }

  void grow_to(std::size_t floats) {
    if (floats <= size_) return;
    kernels::device_free(where_, ptr_);
    ptr_ = nullptr;
    size_ = 0;
    allocate(floats);
  }

 private:
  void allocate(std::size_t floats) {
    ptr_ = static_cast<float*>(kernels::device_alloc(where_, floats * sizeof(float)));
    size_ = floats;
  }
  void swap(device_buffer& o) noexcept {
    std::swap(where_, o.where_);
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
  }

  kernels::backend where_ = kernels::backend::cpu;
  float* ptr_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace anchorage
