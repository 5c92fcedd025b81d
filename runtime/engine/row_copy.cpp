#include "runtime/engine/row_copy.hpp"

#include <stdexcept>

#include "kernels/ops.hpp"

namespace anchorage {

std::size_t row_copy::bytes_for(const state_layout& layout, std::size_t a, std::size_t b) {
  const std::size_t bytes = (b > a ? b - a : 0) * layout.row_bytes();
  return (bytes + sizeof(float) - 1) / sizeof(float) * sizeof(float);
}

row_copy row_copy::take(const state_adapter& from, kernels::backend where, std::size_t a, std::size_t b) {
  if (a > b) throw std::out_of_range("row_copy: rows [" + std::to_string(a) + ", " + std::to_string(b) + ")");
  const state_layout& l = from.layout();
  row_copy c;
  c.a_ = a;
  c.b_ = b;
  c.where_ = where;
  c.buf_ = device_buffer(where, bytes_for(l, a, b) / sizeof(float));
  auto* at = reinterpret_cast<unsigned char*>(c.buf_.data());
  for (std::size_t v = 0; v < l.views.size(); ++v) {
    if (b > a) from.copy_rows_out(v, a, b, at);
    at += (b - a) * l.views[v].bytes_per_token;
  }
  return c;
}

void row_copy::restore(state_adapter& into) const {
  const state_layout& l = into.layout();
  if (bytes_for(l, a_, b_) != buf_.bytes())
    throw std::invalid_argument("row_copy::restore: the engine's layout differs from the copy's");
  const auto* at = reinterpret_cast<const unsigned char*>(buf_.data());
  for (std::size_t v = 0; v < l.views.size(); ++v) {
    if (b_ > a_) into.copy_rows_in(v, a_, b_, at);
    at += (b_ - a_) * l.views[v].bytes_per_token;
  }
}

const unsigned char* row_copy::view_rows(const state_layout& layout, std::size_t view) const {
  if (view >= layout.views.size()) throw std::out_of_range("row_copy: no view " + std::to_string(view));
  const auto* at = reinterpret_cast<const unsigned char*>(buf_.data());
  for (std::size_t v = 0; v < view; ++v) at += (b_ - a_) * layout.views[v].bytes_per_token;
  return at;
}

void row_copy::checksum(const state_layout& layout, std::size_t view, std::size_t a, std::size_t b,
                        std::uint64_t out[2]) const {
  if (a < a_ || b > b_ || a > b)
    throw std::out_of_range("row_copy: rows [" + std::to_string(a) + ", " + std::to_string(b) +
                            ") outside [" + std::to_string(a_) + ", " + std::to_string(b_) + ")");
  const std::size_t row = layout.views.at(view).bytes_per_token;
  if (row % 8 != 0)
    throw std::invalid_argument("row_copy::checksum: rows of a whole number of 64-bit words only");
  kernels::ops_for(where_).block_checksum(view_rows(layout, view), static_cast<long>(row),
                                          static_cast<long>(a - a_), static_cast<long>(b - a_), out);
}

}  // namespace anchorage
