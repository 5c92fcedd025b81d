// resize_prefaulted: a vector of n zero bytes whatever the kernel does with the hints, its storage
// kept when it already holds n bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "runtime/core/prefault.hpp"

using namespace anchorage;

TEST_CASE("resize_prefaulted gives n zero bytes, small or huge", "[core]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{5} << 20}) {
    INFO(n);
    std::vector<unsigned char> v;
    resize_prefaulted(v, n);
    REQUIRE(v.size() == n);
    CHECK(std::all_of(v.begin(), v.end(), [](unsigned char c) { return c == 0; }));
    std::fill(v.begin(), v.end(), static_cast<unsigned char>(7));
    const unsigned char* before = v.data();
    v.clear();
    resize_prefaulted(v, n);  // storage already big enough: kept, zeroed again
    CHECK(v.data() == before);
    CHECK(std::all_of(v.begin(), v.end(), [](unsigned char c) { return c == 0; }));
  }
  // an odd start: the hints round inward and never touch memory outside the vector
  std::vector<unsigned char> guard(64, 9);
  std::vector<unsigned char> w;
  resize_prefaulted(w, (std::size_t{3} << 20) + 123);
  CHECK(w.size() == (std::size_t{3} << 20) + 123);
  CHECK(std::all_of(guard.begin(), guard.end(), [](unsigned char c) { return c == 9; }));
}
