#include "runtime/engine/state_layout.hpp"

namespace anchorage {

std::size_t state_layout::section_bytes() const {
  std::size_t n = 0;
  for (const auto& s : sections) n += s.bytes;
  return n;
}

std::size_t state_layout::row_bytes() const {
  std::size_t n = 0;
  for (const auto& v : views) n += v.bytes_per_token;
  return n;
}

std::optional<std::size_t> state_layout::section_index(const std::string& name) const {
  for (std::size_t i = 0; i < sections.size(); ++i)
    if (sections[i].name == name) return i;
  return std::nullopt;
}

std::optional<std::size_t> state_layout::view_index(const std::string& name) const {
  for (std::size_t i = 0; i < views.size(); ++i)
    if (views[i].name == name) return i;
  return std::nullopt;
}

std::string state_layout::describe() const {
  std::string s = "grid=" + std::to_string(grid);
  for (const auto& x : sections) s += ";section:" + x.name + ":" + std::to_string(x.bytes);
  for (const auto& x : views) s += ";view:" + x.name + ":" + std::to_string(x.bytes_per_token);
  return s;
}

}  // namespace anchorage
