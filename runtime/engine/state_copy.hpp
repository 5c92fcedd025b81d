#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/device.hpp"
#include "runtime/engine/device_buffer.hpp"
#include "runtime/engine/state_adapter.hpp"

namespace anchorage {

// A copy of an engine's state taken through the adapter only: every section whole and, when
// `rows` > 0, rows [0, rows) of every view. An anchor is a copy without rows (the rows stay in
// the engine's buffers); a state-store snapshot is a copy with them. The bytes live where the
// engine's buffers do (kernels::device_alloc of its backend). Move-only.
class state_copy {
 public:
  state_copy() = default;

  // The bytes a copy of `layout` with `rows` rows takes: what a budget is asked for before
  // anything is allocated or copied.
  static std::size_t bytes_for(const state_layout& layout, std::size_t rows);

  // Copies the state out of `from`. Throws std::out_of_range when rows > from.valid_length().
  static state_copy take(const state_adapter& from, kernels::backend where, std::size_t rows);

  // Writes every section back and, for a copy with rows, rows [0, rows) of every view; sets
  // the valid length to `length` (rows for a snapshot; the anchor's position for an anchor,
  // whose rows are the engine's own). Throws std::invalid_argument when the layout differs.
  void restore(state_adapter& into, std::size_t length) const;

  // A copy without rows of every section's bytes as given (host memory, layout order): an anchor
  // read back from a file. Throws std::invalid_argument when a size differs from the layout's.
  static state_copy from_sections(const state_layout& layout, kernels::backend where,
                                  const std::vector<std::vector<unsigned char>>& sections);
  // Section i's bytes, readable on the host once the device is synced; and
  // kernels::block_checksum over them, on the copy's backend.
  const unsigned char* section_data(std::size_t i) const;
  void checksum_section(std::size_t i, std::uint64_t out[2]) const;

  std::size_t rows() const { return rows_; }
  std::size_t bytes() const { return buf_.bytes(); }
  bool empty() const { return buf_.size() == 0; }

 private:
  std::size_t rows_ = 0;
  kernels::backend where_ = kernels::backend::cpu;
  std::vector<std::size_t> section_sizes_;
  std::vector<std::size_t> row_sizes_;
  device_buffer buf_;
};

}  // namespace anchorage
