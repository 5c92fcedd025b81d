#pragma once
// Helpers for tests that damage a GGUF file's bytes on purpose: read and write a whole file, and
// find a field of a tensor's info record in the header.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

namespace anchorage::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The byte position of field `field` (0: n_dims, 1..n: ne[i-1], n+1: type) in the tensor info of
// `name`, found after its length-prefixed name in the header.
inline std::size_t info_field(const std::string& bytes, const std::string& name, int field) {
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i)
    key[static_cast<std::size_t>(i)] = static_cast<char>((name.size() >> (8 * i)) & 0xff);
  key += name;
  const std::size_t at = bytes.find(key);
  REQUIRE(at != std::string::npos);
  const std::size_t dims_at = at + key.size();
  const auto n_dims = static_cast<int>(static_cast<unsigned char>(bytes[dims_at]));
  if (field == 0) return dims_at;
  if (field <= n_dims) return dims_at + 4 + 8 * static_cast<std::size_t>(field - 1);
  return dims_at + 4 + 8 * static_cast<std::size_t>(n_dims);
}

inline void put_u32(std::string& bytes, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    bytes[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace anchorage::testing
