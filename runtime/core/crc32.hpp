#pragma once
#include <cstddef>
#include <cstdint>

namespace anchorage {

// IEEE 802.3 CRC-32 (zlib's crc32, PNG, gzip): reflected, polynomial 0xEDB88320, initial value
// and final xor 0xFFFFFFFF. crc32("123456789") == 0xCBF43926.
std::uint32_t crc32(const void* data, std::size_t n);

// Continues a crc over more bytes: crc32_extend(crc32(a), b) == crc32(a followed by b), and
// crc32_extend(0, x) == crc32(x). Thread-safe (the tables are constants).
std::uint32_t crc32_extend(std::uint32_t crc, const void* data, std::size_t n);

}  // namespace anchorage
