#include "runtime/core/crc32.hpp"

#include <libdeflate.h>

namespace anchorage {

// libdeflate's CRC-32 is this one (gzip's: reflected 0xEDB88320, ~0 in and out) with the same
// chaining convention, and it picks its code by CPU at run time (carry-less multiplication where
// the CPU has it): the spill's and the disk tier's verified reads check every byte with it.
std::uint32_t crc32_extend(std::uint32_t crc, const void* data, std::size_t n) {
  return libdeflate_crc32(crc, data, n);
}

std::uint32_t crc32(const void* data, std::size_t n) { return libdeflate_crc32(0, data, n); }

}  // namespace anchorage
