#pragma once
// Private to runtime/disk_codec*.cpp: little-endian fields, table entries and the checks the
// chunk and anchor readers share. Not part of the codec's API.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "protocol/disk_format.hpp"
#include "runtime/core/crc32.hpp"
#include "runtime/core/little_endian.hpp"
#include "runtime/disk/disk_codec.hpp"

namespace anchorage::disk_codec_detail {

namespace df = disk_format;
using df::fault;
using bytes = std::vector<unsigned char>;

using little_endian::get_u32;
using little_endian::get_u64;
using little_endian::hex;
using little_endian::put_u32;
using little_endian::put_u64;
inline std::string num(std::uint64_t v) { return std::to_string(v); }

// The first byte after the crc field: the header crc covers [header_crc_from, header_bytes).
inline constexpr std::size_t header_crc_from = 16;

// A format 2 entry at `at`: name, size, crc. A name that does not fit is the caller's error.
inline void put_entry(bytes& b, std::size_t at, const std::string& name, std::uint64_t size,
                      std::uint32_t crc) {
  if (name.empty() || name.size() > df::entry_name_bytes || name.find('\0') != std::string::npos)
    throw std::invalid_argument("the name '" + name + "' does not fit a disk entry (1 to " +
                                num(df::entry_name_bytes) + " bytes, no NUL)");
  std::memcpy(b.data() + at, name.data(), name.size());
  put_u64(b, at + df::entry_size_offset, size);
  put_u32(b, at + df::entry_crc_offset, crc);
}
inline df::entry get_entry(const unsigned char* p) {
  std::size_t n = 0;
  while (n < df::entry_name_bytes && p[n] != 0) ++n;
  return {std::string(reinterpret_cast<const char*>(p), n), get_u64(p + df::entry_size_offset),
          get_u32(p + df::entry_crc_offset)};
}

// The grid of `l`, after checking that line_b is a positive multiple of it (caller's error).
inline std::size_t checked_line(const state_layout& l, std::size_t line_b) {
  const auto g = static_cast<std::size_t>(l.grid);
  if (g == 0 || line_b == 0 || line_b % g != 0)
    throw std::invalid_argument("line " + num(line_b) + " is not a positive multiple of the grid " + num(g));
  return g;
}

// Maps each file entry to its layout index: every layout name exactly once, sizes equal.
// Returns what differs, or an empty string.
template <class Info, class Size>
std::string match_entries(const std::vector<df::entry>& file, const std::vector<Info>& layout,
                          const std::string& what, Size size_of, std::vector<std::size_t>& to_layout) {
  if (file.size() != layout.size())
    return "the file has " + num(file.size()) + " " + what + "s, this engine's layout " + num(layout.size());
  std::vector<bool> seen(layout.size(), false);
  to_layout.clear();
  for (const auto& e : file) {
    std::size_t i = 0;
    while (i < layout.size() && layout[i].name != e.name) ++i;
    if (i == layout.size()) return what + " '" + e.name + "' is not in this engine's layout";
    if (seen[i]) return what + " '" + e.name + "' appears twice";
    if (e.size != size_of(layout[i]))
      return what + " '" + e.name + "': size " + num(e.size) + " in the file, " + num(size_of(layout[i])) +
             " in the layout";
    seen[i] = true;
    to_layout.push_back(i);
  }
  return {};
}

// Length and magic: `kind` is "a chunk" or "an anchor".
template <class H>
decode_result<H> check_start(const unsigned char* d, std::size_t size, std::size_t fixed, std::uint64_t magic,
                             std::uint64_t other_magic, const std::string& kind) {
  using R = decode_result<H>;
  if (size < fixed)
    return R::failure(fault::truncated, num(size) + " bytes, " + kind + " file's header needs " + num(fixed));
  const std::uint64_t m = get_u64(d);
  if (m == other_magic) return R::failure(fault::bad_magic, "not " + kind + " file (the other kind)");
  if (m != magic) return R::failure(fault::bad_magic, "not " + kind + " file (magic " + hex(m) + ")");
  return {};
}

// header_bytes agrees with the counts, the header is all there, its crc holds, reserved is 0.
template <class H>
decode_result<H> check_header(const unsigned char* d, std::size_t size, std::uint64_t expect_hb,
                              std::size_t hb_at, std::size_t crc_at, std::size_t reserved_at) {
  using R = decode_result<H>;
  const std::uint32_t hb = get_u32(d + hb_at);
  if (hb != expect_hb)
    return R::failure(fault::bad_header, "header_bytes " + num(hb) + ", its counts make " + num(expect_hb));
  if (size < hb) return R::failure(fault::truncated, num(size) + " bytes, the header needs " + num(hb));
  const std::uint32_t crc = crc32(d + header_crc_from, hb - header_crc_from);
  if (crc != get_u32(d + crc_at))
    return R::failure(fault::bad_header, "header crc32 " + hex(crc) + ", stored " + hex(get_u32(d + crc_at)));
  if (get_u64(d + reserved_at) != 0) return R::failure(fault::bad_header, "reserved field not 0");
  return {};
}

// The file belongs to this engine: same fingerprint, same grid.
template <class R>
bool check_engine(R& r, std::uint64_t fingerprint, std::uint32_t grid, const state_layout& l) {
  if (fingerprint != l.fingerprint)
    r = R::failure(fault::foreign_engine,
                   "fingerprint " + hex(fingerprint) + ", this engine's is " + hex(l.fingerprint));
  else if (grid != static_cast<std::uint32_t>(l.grid))
    r = R::failure(fault::foreign_engine, "grid " + num(grid) + ", this engine's is " + num(l.grid));
  return r.ok();
}

// The header's file_bytes is what the layout makes, and the bytes are exactly that long.
template <class R>
bool check_length(R& r, std::uint64_t file_bytes, std::uint64_t expect, std::size_t size) {
  if (file_bytes != expect)
    r = R::failure(fault::bad_header, "file_bytes " + num(file_bytes) + ", the layout makes " + num(expect));
  else if (size < expect)
    r = R::failure(fault::truncated, num(size) + " of " + num(expect) + " bytes");
  else if (size > expect)
    r = R::failure(fault::bad_header, num(size) + " bytes, the header says " + num(expect));
  return r.ok();
}

// A failure passed on with its fault and message.
// The fields every format keeps at the same offsets (version 8, header_bytes 16, grid 20,
// fingerprint 24, file_bytes 32; protocol/disk_format.hpp, protocol/checkpoint_format.hpp).
template <class H>
void get_common_fields(const unsigned char* d, std::uint32_t version, H& h) {
  static_assert(df::chunk_offset::grid == df::anchor_offset::grid, "formats share their first fields");
  h.version = version;
  h.header_bytes = get_u32(d + df::chunk_offset::header_bytes);
  h.grid = get_u32(d + df::chunk_offset::grid);
  h.fingerprint = get_u64(d + df::chunk_offset::fingerprint);
  h.file_bytes = get_u64(d + df::chunk_offset::file_bytes);
}

// Checks each section block's crc32 in file order and copies it to out[to_layout[i]]. `at` moves
// past the blocks. An empty string when every one passed; otherwise the failure's message.
inline std::string copy_checked_sections(const unsigned char*& at, const std::vector<df::entry>& entries,
                                         const std::vector<std::size_t>& to_layout,
                                         std::vector<std::vector<unsigned char>>& out) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::size_t n = entries[i].size;
    const std::uint32_t c = crc32(at, n);
    if (c != entries[i].crc)
      return "section " + entries[i].name + ": crc32 " + hex(c) + ", stored " + hex(entries[i].crc);
    out[to_layout[i]].assign(at, at + n);
    at += n;
  }
  return {};
}

template <class T, class U>
decode_result<T> forward(const decode_result<U>& u) {
  decode_result<T> t;
  t.fault = u.fault;
  t.error = u.error;
  return t;
}

}  // namespace anchorage::disk_codec_detail
