#include "runtime/store/record_file.hpp"

#include <cstdint>

#include "protocol/record_format.hpp"
#include "runtime/core/little_endian.hpp"

namespace anchorage::store {

std::optional<std::vector<unsigned char>> read_record_header(file_env& env, const std::string& path,
                                                             std::size_t fixed,
                                                             std::size_t max_header_bytes) {
  if (fixed < record_format::preamble_bytes) return std::nullopt;
  std::vector<unsigned char> h(fixed);
  if (!env.read(path, 0, h.data(), fixed)) return std::nullopt;
  const std::size_t hb = little_endian::get_u32(h.data() + record_format::offset::header_bytes);
  if (hb < fixed || hb > max_header_bytes) return std::nullopt;
  h.resize(hb);
  if (hb > fixed && !env.read(path, fixed, h.data() + fixed, hb - fixed)) return std::nullopt;
  return h;
}

}  // namespace anchorage::store
