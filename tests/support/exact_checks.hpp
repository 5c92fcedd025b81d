#pragma once
// Byte-for-byte comparisons of engine states, shared by every exactness test.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "tests/support/engine_fixture.hpp"

namespace anchorage::testing {

inline bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp may not be given the null data() of an empty vector, even for 0 bytes.
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Compares every section and every view row [0, length) byte for byte, naming what differs.
inline void require_same_state(const snapshot& a, const snapshot& b, const state_layout& l) {
  REQUIRE(a.length == b.length);
  for (std::size_t i = 0; i < l.sections.size(); ++i) {
    INFO("section " << l.sections[i].name);
    REQUIRE(a.sections[i].size() == b.sections[i].size());
    CHECK(std::memcmp(a.sections[i].data(), b.sections[i].data(), a.sections[i].size()) == 0);
  }
  for (std::size_t i = 0; i < l.views.size(); ++i) {
    INFO("view " << l.views[i].name);
    REQUIRE(a.views[i].size() == b.views[i].size());
    CHECK(std::memcmp(a.views[i].data(), b.views[i].data(), a.views[i].size()) == 0);
  }
}

inline std::vector<token_id> slice(const std::vector<token_id>& t, std::size_t a, std::size_t b) {
  return {t.begin() + static_cast<long>(a), t.begin() + static_cast<long>(b)};
}

inline std::vector<token_id> concat(std::vector<token_id> a, const std::vector<token_id>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace anchorage::testing
