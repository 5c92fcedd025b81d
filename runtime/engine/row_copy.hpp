#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/device.hpp"
#include "runtime/engine/device_buffer.hpp"
#include "runtime/engine/state_adapter.hpp"

namespace anchorage {

// Rows [a, b) of every view of an engine, copied through its adapter: what a guest's stash,
// a pinned head and a parked session hold. Move-only; the bytes live where the engine's do.
class row_copy {
 public:
  row_copy() = default;

  // The bytes rows [a, b) of `layout` take: asked of a budget before anything is copied.
  static std::size_t bytes_for(const state_layout& layout, std::size_t a, std::size_t b);

  // Throws std::out_of_range when [a, b) is not within the views' capacity.
  static row_copy take(const state_adapter& from, kernels::backend where, std::size_t a, std::size_t b);

  // Writes the rows back where they came from. The valid length is not touched.
  void restore(state_adapter& into) const;

  // The copy's bytes of view `view` (rows [first(), last()) of it, contiguous), readable on the
  // host once the device is synced (kernels::device_sync); `layout` is the one it was taken from.
  const unsigned char* view_rows(const state_layout& layout, std::size_t view) const;
  // kernels::block_checksum over rows [a, b) (positions of the engine, within [first(), last()))
  // of one view, on the copy's backend.
  void checksum(const state_layout& layout, std::size_t view, std::size_t a, std::size_t b,
                std::uint64_t out[2]) const;

  std::size_t first() const { return a_; }
  std::size_t last() const { return b_; }  // one past
  std::size_t bytes() const { return buf_.bytes(); }
  bool empty() const { return a_ == b_; }

 private:
  std::size_t a_ = 0, b_ = 0;
  kernels::backend where_ = kernels::backend::cpu;
  device_buffer buf_;
};

}  // namespace anchorage
