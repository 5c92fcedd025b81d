// prefault_for_write: hints only. Whatever the kernel does with them, the bytes of the range and
// those around it are what they were (a hint that dropped pages, MADV_DONTNEED, would zero them).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "runtime/core/prefault.hpp"

using namespace anchorage;

TEST_CASE("prefault_for_write keeps every byte, in the range and around it", "[core]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, (std::size_t{5} << 20) + 123}) {
    INFO(n);
    // The range starts at an odd offset: the hints round inward, never outside it.
    std::vector<unsigned char> v(n + 4096 + 77);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<unsigned char>(i * 31 + 7);
    const std::vector<unsigned char> before = v;
    prefault_for_write(v.data() + 77, n);
    CHECK(v == before);
    // Still writable everywhere.
    std::fill(v.begin(), v.end(), static_cast<unsigned char>(9));
    CHECK(std::all_of(v.begin(), v.end(), [](unsigned char c) { return c == 9; }));
  }
}
