#include "runtime/engine/state_copy.hpp"

#include <cstring>
#include <stdexcept>

#include "kernels/ops.hpp"

namespace anchorage {
namespace {

std::size_t floats_for(std::size_t bytes) { return (bytes + sizeof(float) - 1) / sizeof(float); }

}  // namespace

std::size_t state_copy::bytes_for(const state_layout& layout, std::size_t rows) {
  return floats_for(layout.section_bytes() + rows * layout.row_bytes()) * sizeof(float);
}

state_copy state_copy::take(const state_adapter& from, kernels::backend where, std::size_t rows) {
  if (rows > from.valid_length())
    throw std::out_of_range("a copy of " + std::to_string(rows) + " rows of a state valid to " +
                            std::to_string(from.valid_length()));
  const state_layout& l = from.layout();
  state_copy c;
  c.rows_ = rows;
  c.where_ = where;
  c.buf_ = device_buffer(where, floats_for(l.section_bytes() + rows * l.row_bytes()));
  auto* at = reinterpret_cast<unsigned char*>(c.buf_.data());
  for (std::size_t i = 0; i < l.sections.size(); ++i) {
    from.copy_section_out(i, at);
    at += l.sections[i].bytes;
    c.section_sizes_.push_back(l.sections[i].bytes);
  }
  for (std::size_t i = 0; i < l.views.size(); ++i) {
    if (rows > 0) from.copy_rows_out(i, 0, rows, at);
    at += rows * l.views[i].bytes_per_token;
    c.row_sizes_.push_back(l.views[i].bytes_per_token);
  }
  return c;
}

void state_copy::restore(state_adapter& into, std::size_t length) const {
  const state_layout& l = into.layout();
  if (l.sections.size() != section_sizes_.size() || l.views.size() != row_sizes_.size())
    throw std::invalid_argument("state_copy::restore: the engine's layout differs from the copy's");
  for (std::size_t i = 0; i < l.sections.size(); ++i)
    if (l.sections[i].bytes != section_sizes_[i])
      throw std::invalid_argument("state_copy::restore: section " + l.sections[i].name + " differs in size");
  for (std::size_t i = 0; i < l.views.size(); ++i)
    if (l.views[i].bytes_per_token != row_sizes_[i])
      throw std::invalid_argument("state_copy::restore: view " + l.views[i].name + " differs in row size");
  if (rows_ > 0 && length != rows_)
    throw std::invalid_argument("state_copy::restore: a snapshot of " + std::to_string(rows_) +
                                " rows restored at " + std::to_string(length));
  const auto* at = reinterpret_cast<const unsigned char*>(buf_.data());
  for (std::size_t i = 0; i < l.sections.size(); ++i) {
    into.copy_section_in(i, at);
    at += section_sizes_[i];
  }
  for (std::size_t i = 0; i < l.views.size(); ++i) {
    if (rows_ > 0) into.copy_rows_in(i, 0, rows_, at);
    at += rows_ * row_sizes_[i];
  }
  into.set_valid_length(length);
}

state_copy state_copy::from_sections(const state_layout& layout, kernels::backend where,
                                     const std::vector<std::vector<unsigned char>>& sections) {
  if (sections.size() != layout.sections.size())
    throw std::invalid_argument("state_copy::from_sections: " + std::to_string(sections.size()) +
                                " sections for a layout of " + std::to_string(layout.sections.size()));
  state_copy c;
  c.where_ = where;
  c.buf_ = device_buffer(where, floats_for(layout.section_bytes()));
  auto* at = reinterpret_cast<unsigned char*>(c.buf_.data());
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].size() != layout.sections[i].bytes)
      throw std::invalid_argument("state_copy::from_sections: section " + layout.sections[i].name +
                                  " differs in size");
    std::memcpy(at, sections[i].data(), sections[i].size());
    at += sections[i].size();
    c.section_sizes_.push_back(sections[i].size());
  }
  for (const auto& v : layout.views) c.row_sizes_.push_back(v.bytes_per_token);
  return c;
}

const unsigned char* state_copy::section_data(std::size_t i) const {
  if (i >= section_sizes_.size()) throw std::out_of_range("state_copy: no section " + std::to_string(i));
  const auto* at = reinterpret_cast<const unsigned char*>(buf_.data());
  for (std::size_t s = 0; s < i; ++s) at += section_sizes_[s];
  return at;
}

void state_copy::checksum_section(std::size_t i, std::uint64_t out[2]) const {
  const std::size_t bytes = section_sizes_.at(i);
  if (bytes % 8 != 0)
    throw std::invalid_argument(
        "state_copy::checksum_section: sections of a whole number of 64-bit words only");
  kernels::ops_for(where_).block_checksum(section_data(i), static_cast<long>(bytes), 0, 1, out);
}

}  // namespace anchorage
