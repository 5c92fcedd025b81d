#include "runtime/store/record.hpp"

#include "runtime/core/crc32.hpp"
#include "runtime/core/little_endian.hpp"

namespace anchorage::store {

namespace off = record_format::offset;
using little_endian::get_u32;
using little_endian::get_u64;
using little_endian::hex;
using little_endian::put_u32;
using little_endian::put_u64;

namespace {
std::string num(std::uint64_t v) { return std::to_string(v); }

std::string kind_or_hex(std::uint64_t m) {
  const char* k = record_format::kind_name(m);
  return k ? std::string(k) + " file" : "magic " + hex(m);
}
}  // namespace

void put_preamble(std::vector<unsigned char>& b, std::uint64_t magic, std::uint32_t version,
                  std::size_t header_bytes, std::uint32_t grid, std::uint64_t fingerprint,
                  std::uint64_t file_bytes) {
  put_u64(b, off::magic, magic);
  put_u32(b, off::version, version);
  put_u32(b, off::header_crc, 0);
  put_u32(b, off::header_bytes, static_cast<std::uint32_t>(header_bytes));
  put_u32(b, off::grid, grid);
  put_u64(b, off::fingerprint, fingerprint);
  put_u64(b, off::file_bytes, file_bytes);
}

void seal_header(std::vector<unsigned char>& b, std::size_t header_bytes) {
  const auto from = record_format::header_crc_from;
  put_u32(b, off::header_crc, crc32(b.data() + from, header_bytes - from));
}

record_problem read_preamble(const unsigned char* d, std::size_t size, std::size_t fixed, std::uint64_t magic,
                             std::initializer_list<std::uint32_t> known, record_format::preamble& p) {
  const std::string kind = kind_or_hex(magic);
  if (size < fixed)
    return {fault::truncated, num(size) + " bytes, " + kind + "'s header needs " + num(fixed)};
  const std::uint64_t m = get_u64(d + off::magic);
  if (m != magic) return {fault::bad_magic, "not " + kind + " (" + kind_or_hex(m) + ")"};
  p.version = get_u32(d + off::version);
  bool knows = false;
  std::string list;
  for (const std::uint32_t v : known) {
    knows = knows || v == p.version;
    list += (list.empty() ? "" : " and ") + num(v);
  }
  if (!knows)
    return {fault::bad_version, kind + " of version " + num(p.version) + ", this reader knows " + list};
  p.header_bytes = get_u32(d + off::header_bytes);
  p.grid = get_u32(d + off::grid);
  p.fingerprint = get_u64(d + off::fingerprint);
  p.file_bytes = get_u64(d + off::file_bytes);
  return {};
}

record_problem check_header(const unsigned char* d, std::size_t size, const record_format::preamble& p,
                            std::uint64_t expect_hb) {
  if (p.header_bytes != expect_hb)
    return {fault::bad_header, "header_bytes " + num(p.header_bytes) + ", its counts make " + num(expect_hb)};
  if (size < expect_hb) return {fault::truncated, num(size) + " bytes, the header needs " + num(expect_hb)};
  const auto from = record_format::header_crc_from;
  const std::uint32_t crc = crc32(d + from, static_cast<std::size_t>(expect_hb) - from);
  const std::uint32_t stored = get_u32(d + off::header_crc);
  if (crc != stored) return {fault::bad_header, "header crc32 " + hex(crc) + ", stored " + hex(stored)};
  return {};
}

record_problem check_engine(const record_format::preamble& p, std::uint64_t fingerprint, std::uint32_t grid) {
  if (p.fingerprint != fingerprint)
    return {fault::foreign_engine,
            "fingerprint " + hex(p.fingerprint) + ", this engine's is " + hex(fingerprint)};
  if (p.grid != grid)
    return {fault::foreign_engine, "grid " + num(p.grid) + ", this engine's is " + num(grid)};
  return {};
}

record_problem check_length(std::uint64_t file_bytes, std::uint64_t expect, std::size_t size) {
  if (file_bytes != expect)
    return {fault::bad_header, "file_bytes " + num(file_bytes) + ", its fields make " + num(expect)};
  if (size < expect) return {fault::truncated, num(size) + " of " + num(expect) + " bytes"};
  if (size > expect) return {fault::bad_header, num(size) + " bytes, the header says " + num(expect)};
  return {};
}

}  // namespace anchorage::store
