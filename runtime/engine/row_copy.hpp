#pragma once
#include <cstddef>
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

  std::size_t first() const { return a_; }
  std::size_t last() const { return b_; }  // one past
  std::size_t bytes() const { return buf_.bytes(); }
  bool empty() const { return a_ == b_; }

 private:
  std::size_t a_ = 0, b_ = 0;
  device_buffer buf_;
};

}  // namespace anchorage
