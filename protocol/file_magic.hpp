#pragma once
#include <cstdint>

namespace anchorage {

// An 8-byte magic as a little-endian u64: the file starts with these ASCII bytes (the disk
// tier's and the spill's files alike).
constexpr std::uint64_t file_magic_of(const char (&s)[9]) {
  std::uint64_t m = 0;
  for (int i = 7; i >= 0; --i) m = (m << 8) | static_cast<unsigned char>(s[i]);
  return m;
}

}  // namespace anchorage
