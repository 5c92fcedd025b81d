// The CRC-32 every file section carries (the disk tier, the spill, the suffix log): files written
// before the switch to libdeflate must still verify, so the sums must be gzip's CRC-32 exactly,
// checked here against the check value and a bit-at-a-time reference over lengths and offsets
// that exercise every code path (short tails, unaligned starts, the vector loops).
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/core/crc32.hpp"

using namespace anchorage;

namespace {

std::uint32_t bitwise_crc32(const unsigned char* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
  }
  return ~c;
}

}  // namespace

TEST_CASE("crc32 is gzip's CRC-32: the check value, and a bitwise reference at every length and offset",
          "[core]") {
  const char* check = "123456789";
  CHECK(crc32(check, 9) == 0xCBF43926u);
  CHECK(crc32(check, 0) == 0u);
  std::mt19937_64 rng(42);
  std::vector<unsigned char> buf(70000);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  for (std::size_t off : {0, 1, 3, 7, 13}) {
    for (std::size_t n : {1, 2, 15, 16, 17, 63, 64, 65, 255, 256, 4095, 4096, 65536}) {
      INFO("offset " << off << ", " << n << " bytes");
      CHECK(crc32(buf.data() + off, n) == bitwise_crc32(buf.data() + off, n));
    }
  }
}

TEST_CASE("crc32_extend continues a crc: a split anywhere gives the crc of the whole", "[core]") {
  std::mt19937_64 rng(7);
  std::vector<unsigned char> buf(10000);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  const std::uint32_t whole = crc32(buf.data(), buf.size());
  for (std::size_t cut : {0, 1, 100, 4097, 9999, 10000}) {
    INFO("cut at " << cut);
    CHECK(crc32_extend(crc32(buf.data(), cut), buf.data() + cut, buf.size() - cut) == whole);
  }
  CHECK(crc32_extend(0, buf.data(), buf.size()) == whole);
}
