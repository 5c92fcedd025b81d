#include "runtime/disk/staged_state.hpp"

#include <cstring>
#include <stdexcept>

namespace anchorage {

std::size_t staged_write::bytes() const {
  std::size_t n = 0;
  for (const auto& r : rows) n += r.size();
  for (const auto& a : anchors)
    for (const auto& s : a.sections) n += s.size();
  return n;
}

std::size_t staged_section_bytes(const state_layout& layout) { return layout.section_bytes(); }

std::size_t staged_row_bytes(const state_layout& layout, std::size_t lo, std::size_t hi) {
  return hi > lo ? (hi - lo) * layout.row_bytes() : 0;
}

staged_anchor stage_sections(const state_adapter& from, std::size_t line) {
  const state_layout& l = from.layout();
  staged_anchor a;
  a.line = line;
  a.sections.reserve(l.sections.size());
  for (std::size_t s = 0; s < l.sections.size(); ++s) {
    a.sections.emplace_back(l.sections[s].bytes);
    from.copy_section_out(s, a.sections.back().data());
  }
  return a;
}

void stage_rows(staged_write& w, const state_adapter& from, std::size_t lo, std::size_t hi) {
  const state_layout& l = from.layout();
  if (hi < lo) throw std::out_of_range("stage_rows: an empty range backwards");
  std::vector<std::vector<unsigned char>> rows;
  rows.reserve(l.views.size());
  for (std::size_t v = 0; v < l.views.size(); ++v) {
    rows.emplace_back((hi - lo) * l.views[v].bytes_per_token);
    if (hi > lo) from.copy_rows_out(v, lo, hi, rows.back().data());
  }
  w.rows = std::move(rows);
  w.row_lo = lo;
  w.row_hi = hi;
}

void staged_state::copy_section_out(std::size_t section, void* dst) const {
  if (!anchor_ || section >= anchor_->sections.size())
    throw std::out_of_range("staged_state: no staged section " + std::to_string(section));
  std::memcpy(dst, anchor_->sections[section].data(), anchor_->sections[section].size());
}

void staged_state::copy_rows_out(std::size_t view, std::size_t a, std::size_t b, void* dst) const {
  if (view >= w_.rows.size() || a > b || a < w_.row_lo || b > w_.row_hi)
    throw std::out_of_range("staged_state: rows [" + std::to_string(a) + ", " + std::to_string(b) +
                            ") of view " + std::to_string(view) + " are not staged");
  const std::size_t bpt = layout_.views.at(view).bytes_per_token;
  std::memcpy(dst, w_.rows[view].data() + (a - w_.row_lo) * bpt, (b - a) * bpt);
}

void staged_state::copy_section_in(std::size_t, const void*) {
  throw std::logic_error("staged_state is read-only");
}
void staged_state::copy_rows_in(std::size_t, std::size_t, std::size_t, const void*) {
  throw std::logic_error("staged_state is read-only");
}
void staged_state::set_valid_length(std::size_t) { throw std::logic_error("staged_state is read-only"); }

}  // namespace anchorage
