#include <cstring>
#include <stdexcept>

#include "kernels/ops.hpp"
#include "runtime/engine/engine_impl.hpp"

namespace anchorage {

engine_state::engine_state(kernels::backend where, state_layout layout, std::vector<region> sections,
                           std::vector<region> views)
    : where_(where), layout_(std::move(layout)), sections_(std::move(sections)), views_(std::move(views)) {}

void engine_state::copy_section_out(std::size_t i, void* dst) const {
  if (i >= sections_.size()) throw std::out_of_range("no section " + std::to_string(i));
  kernels::device_sync(where_);
  std::memcpy(dst, sections_[i].base, sections_[i].bytes);
}

void engine_state::copy_section_in(std::size_t i, const void* src) {
  if (i >= sections_.size()) throw std::out_of_range("no section " + std::to_string(i));
  kernels::device_sync(where_);
  std::memcpy(sections_[i].base, src, sections_[i].bytes);
}

void engine_state::check_rows(std::size_t v, std::size_t a, std::size_t b) const {
  if (v >= views_.size()) throw std::out_of_range("no view " + std::to_string(v));
  if (a > b || b > layout_.views[v].capacity)
    throw std::out_of_range("rows [" + std::to_string(a) + ", " + std::to_string(b) + ") of view " +
                            layout_.views[v].name + " (capacity " +
                            std::to_string(layout_.views[v].capacity) + ")");
}

void engine_state::copy_rows_out(std::size_t v, std::size_t a, std::size_t b, void* dst) const {
  check_rows(v, a, b);
  kernels::device_sync(where_);
  const std::size_t row = views_[v].bytes;
  std::memcpy(dst, reinterpret_cast<const char*>(views_[v].base) + a * row, (b - a) * row);
}

void engine_state::copy_rows_in(std::size_t v, std::size_t a, std::size_t b, const void* src) {
  check_rows(v, a, b);
  kernels::device_sync(where_);
  const std::size_t row = views_[v].bytes;
  std::memcpy(reinterpret_cast<char*>(views_[v].base) + a * row, src, (b - a) * row);
}

void engine_state::checksum_rows(std::size_t v, std::size_t a, std::size_t b, std::uint64_t out[2]) const {
  check_rows(v, a, b);
  const std::size_t row = views_[v].bytes;
  if (row % 8 != 0) return state_adapter::checksum_rows(v, a, b, out);
  kernels::ops_for(where_).block_checksum(views_[v].base, static_cast<long>(row), static_cast<long>(a),
                                          static_cast<long>(b), out);
}

void engine_state::checksum_section(std::size_t i, std::uint64_t out[2]) const {
  if (i >= sections_.size()) throw std::out_of_range("no section " + std::to_string(i));
  const std::size_t bytes = sections_[i].bytes;
  if (bytes % 8 != 0) return state_adapter::checksum_section(i, out);
  kernels::ops_for(where_).block_checksum(sections_[i].base, static_cast<long>(bytes), 0, 1, out);
}

void engine_state::set_valid_length(std::size_t n) {
  for (const auto& v : layout_.views)
    if (n > v.capacity)
      throw std::out_of_range("valid length " + std::to_string(n) + " past the capacity of view " + v.name +
                              " (" + std::to_string(v.capacity) + ")");
  length_ = n;
}

void engine_state::zero_sections() {
  kernels::device_sync(where_);
  for (const auto& s : sections_) std::memset(s.base, 0, s.bytes);
}

}  // namespace anchorage
