#include "runtime/suffix/suffix_log_format.hpp"

#include <cstring>

#include "runtime/core/crc32.hpp"
#include "runtime/core/little_endian.hpp"

namespace anchorage::suffix_log {

std::string file_name(std::uint64_t tokenizer_digest) {
  return "suffix-" + little_endian::hex(tokenizer_digest) + ".log";
}

std::vector<unsigned char> encode_header(std::uint64_t tokenizer_digest) {
  std::vector<unsigned char> h(header_bytes, 0);
  std::memcpy(h.data(), magic, sizeof magic);
  little_endian::put_u32(h, 8, version);
  little_endian::put_u32(h, 12, static_cast<std::uint32_t>(header_bytes));
  little_endian::put_u64(h, 16, tokenizer_digest);
  little_endian::put_u32(h, 28, crc32(h.data(), 28));
  return h;
}

void encode_record(std::vector<unsigned char>& out, const token_id* ids, std::size_t count, bool continues) {
  const std::size_t at = out.size();
  out.resize(at + record_bytes(count));
  little_endian::put_u32(out, at, static_cast<std::uint32_t>(count));
  little_endian::put_u32(out, at + 4, continues ? flag_continues : 0);
  for (std::size_t i = 0; i < count; ++i)
    little_endian::put_u32(out, at + 8 + 4 * i, static_cast<std::uint32_t>(ids[i]));
  const std::size_t body = 8 + 4 * count;
  little_endian::put_u32(out, at + body, crc32(out.data() + at, body));
}

parsed_log parse(const unsigned char* bytes, std::size_t n, std::uint64_t expected_digest) {
  using little_endian::get_u32;
  parsed_log log;
  if (n < header_bytes) {
    log.header = parsed_log::header_state::short_file;
    return log;
  }
  if (std::memcmp(bytes, magic, sizeof magic) != 0) {
    log.header = parsed_log::header_state::bad_magic;
    return log;
  }
  if (get_u32(bytes + 28) != crc32(bytes, 28)) {
    log.header = parsed_log::header_state::bad_crc;
    return log;
  }
  if (get_u32(bytes + 8) != version || get_u32(bytes + 12) != header_bytes) {
    log.header = parsed_log::header_state::bad_version;
    return log;
  }
  log.digest = little_endian::get_u64(bytes + 16);
  if (log.digest != expected_digest) {
    log.header = parsed_log::header_state::foreign;
    return log;
  }
  std::size_t at = header_bytes;
  while (at < n) {
    if (n - at < record_overhead) break;
    const std::uint32_t count = get_u32(bytes + at);
    const std::uint32_t flags = get_u32(bytes + at + 4);
    if (count == 0 || (n - at - record_overhead) / 4 < count) break;
    const std::size_t body = 8 + 4 * std::size_t{count};
    if (get_u32(bytes + at + body) != crc32(bytes + at, body)) break;
    bool negative = false;  // an id the store never writes (an image row's key): damage
    for (std::size_t i = 0; i < count && !negative; ++i)
      negative = (get_u32(bytes + at + 8 + 4 * i) >> 31) != 0;
    if (negative) break;
    if (!(flags & flag_continues) || log.ids.empty()) log.seg_starts.push_back(log.ids.size());
    for (std::size_t i = 0; i < count; ++i)
      log.ids.push_back(static_cast<token_id>(get_u32(bytes + at + 8 + 4 * i)));
    at += body + 4;
    ++log.records;
  }
  log.whole_bytes = at;
  log.torn = at < n;
  return log;
}

const char* describe(parsed_log::header_state s) {
  switch (s) {
    case parsed_log::header_state::ok:
      return "ok";
    case parsed_log::header_state::short_file:
      return "shorter than its header";
    case parsed_log::header_state::bad_magic:
      return "not a suffix store (bad magic)";
    case parsed_log::header_state::bad_version:
      return "an unknown version";
    case parsed_log::header_state::bad_crc:
      return "a damaged header (bad crc)";
    case parsed_log::header_state::foreign:
      return "another tokenizer's store (its header's digest disagrees with its name)";
  }
  return "?";
}

}  // namespace anchorage::suffix_log
