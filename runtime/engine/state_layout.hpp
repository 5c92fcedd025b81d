#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace anchorage {

// A recurrent buffer copied whole; its size does not depend on the sequence length.
struct section_info {
  std::string name;
  std::size_t bytes;
};

// A position-indexed buffer with a token axis; row t holds bytes_per_token bytes and rows
// [a, b) are contiguous.
struct view_info {
  std::string name;
  std::size_t bytes_per_token;
  std::size_t capacity;  // rows
};

// What an engine exposes to the caches. The caches know no model, only this.
struct state_layout {
  std::vector<section_info> sections;
  std::vector<view_info> views;
  int grid = 0;                   // prefill chunk; resumes on multiples of it are exact
  std::uint64_t fingerprint = 0;  // weights, engine code version, arithmetic, grid, layout

  std::size_t section_bytes() const;  // all sections together
  std::size_t row_bytes() const;      // one row of every view together
  std::optional<std::size_t> section_index(const std::string& name) const;
  std::optional<std::size_t> view_index(const std::string& name) const;
  // A stable text of names and sizes (not capacities): what the fingerprint hashes.
  std::string describe() const;
};

}  // namespace anchorage
