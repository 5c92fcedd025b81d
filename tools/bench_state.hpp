#pragma once
// What the engine benchmarks share: an engine's state saved and put back, so that two runs start
// from the same state. Rows above the length are rewritten by the next run, so the sections and
// the length are the whole state to put back.
#include <cstddef>
#include <vector>

#include "runtime/engine/engine.hpp"

namespace anchorage::bench {

struct saved_state {
  std::size_t length;
  std::vector<std::vector<unsigned char>> sections;
};

inline saved_state save(const engine& e) {
  saved_state s{e.length(), {}};
  const auto& l = e.layout();
  for (std::size_t i = 0; i < l.sections.size(); ++i) {
    s.sections.emplace_back(l.sections[i].bytes);
    e.cache_state().copy_section_out(i, s.sections.back().data());
  }
  return s;
}

inline void put_back(engine& e, const saved_state& s) {
  for (std::size_t i = 0; i < s.sections.size(); ++i)
    e.cache_state().copy_section_in(i, s.sections[i].data());
  e.cache_state().set_valid_length(s.length);
}

}  // namespace anchorage::bench
