#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/engine/state_layout.hpp"

namespace anchorage {

// The seed's cache_state(): the only door the caches have into an engine's state.
// Pointers are host memory. Indices are positions in layout().sections / layout().views.
// Every copy is exact (bytes, no conversion). Contract violations (an index out of range, a row
// range past the capacity) throw std::out_of_range and copy nothing.
class state_adapter {
 public:
  virtual ~state_adapter() = default;

  virtual const state_layout& layout() const = 0;

  // Whole sections.
  virtual void copy_section_out(std::size_t section, void* dst) const = 0;
  virtual void copy_section_in(std::size_t section, const void* src) = 0;

  // Rows [a, b) of a view: (b - a) * bytes_per_token bytes.
  virtual void copy_rows_out(std::size_t view, std::size_t a, std::size_t b, void* dst) const = 0;
  virtual void copy_rows_in(std::size_t view, std::size_t a, std::size_t b, const void* src) = 0;

  // kernels::block_checksum's two sums over rows [a, b) of a view, and over a whole section,
  // computed where the bytes live (the engine overrides these with its backend's kernel; the
  // defaults copy the bytes out and sum them on the CPU, zero-padded to whole 64-bit words).
  // The session spill names its blocks by them. `out` is host memory.
  virtual void checksum_rows(std::size_t view, std::size_t a, std::size_t b, std::uint64_t out[2]) const;
  virtual void checksum_section(std::size_t section, std::uint64_t out[2]) const;

  // Rows [0, n) of every view are valid and the next token goes at row n. The caller is
  // responsible for the sections matching position n (restore them first).
  virtual std::size_t valid_length() const = 0;
  virtual void set_valid_length(std::size_t n) = 0;
};

}  // namespace anchorage
