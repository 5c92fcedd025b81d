#pragma once
// Constants and byte helpers shared by the GGUF reader and writer (gguf_file.hpp); not an API.
#include <cstdint>
#include <cstring>

#include "runtime/model/gguf_file.hpp"

namespace anchorage::gguf_detail {

constexpr std::uint32_t gguf_magic = 0x46554747u;  // "GGUF" read as a little-endian uint32
constexpr std::uint64_t default_alignment = 32;

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Bytes per element of a scalar metadata type; 0 for string and array.
inline std::size_t scalar_size(gguf_type t) {
  switch (t) {
    case gguf_type::uint8:
    case gguf_type::int8:
    case gguf_type::boolean:
      return 1;
    case gguf_type::uint16:
    case gguf_type::int16:
      return 2;
    case gguf_type::uint32:
    case gguf_type::int32:
    case gguf_type::float32:
      return 4;
    case gguf_type::uint64:
    case gguf_type::int64:
    case gguf_type::float64:
      return 8;
    default:
      return 0;
  }
}

inline bool known_type(std::uint32_t t) { return t <= static_cast<std::uint32_t>(gguf_type::float64); }

inline std::uint64_t align_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace anchorage::gguf_detail
