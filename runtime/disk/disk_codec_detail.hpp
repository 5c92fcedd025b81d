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
#include "runtime/store/record.hpp"

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

// The grid of `l`, after checking that it has one and line_b is positive (caller's error). A line
// off the grid is a version 4 file's (disk_format::version_of_line).
inline std::size_t checked_line(const state_layout& l, std::size_t line_b) {
  const auto g = static_cast<std::size_t>(l.grid);
  if (g == 0 || line_b == 0)
    throw std::invalid_argument("line " + num(line_b) + " on the grid " + num(g) +
                                ": a positive line needed");
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

// The reserved field at `at` is zero (every kind's header ends with one).
inline store::record_problem check_reserved(const unsigned char* d, std::size_t at) {
  if (get_u64(d + at) != 0) return {fault::bad_header, "reserved field not 0"};
  return {};
}

// The record belongs to the engine of `l`: same fingerprint, same grid.
inline store::record_problem check_engine(const record_format::preamble& h, const state_layout& l) {
  return store::check_engine(h, l.fingerprint, static_cast<std::uint32_t>(l.grid));
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

}  // namespace anchorage::disk_codec_detail
