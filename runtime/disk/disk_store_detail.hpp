#pragma once
// How the durable store names its files and reads their headers (runtime/disk/disk_store.hpp): shared
// by the store's source files only.
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/disk_format.hpp"
#include "runtime/disk/disk_codec_detail.hpp"
#include "runtime/io/file_env.hpp"

namespace anchorage::disk_store_detail {

namespace df = disk_format;
using disk_codec_detail::get_u32;

inline constexpr const char* chunk_prefix = "c-";
inline constexpr const char* chunk_suffix = ".chk";
inline constexpr const char* anchor_prefix = "a-";
inline constexpr const char* anchor_suffix = ".anc";
inline constexpr const char* ns_prefix = "n-";
inline constexpr const char* checkpoint_prefix = "g-";
inline constexpr const char* checkpoint_suffix = ".gen";
inline constexpr const char* default_ns_dir = "_";
// A header larger than this is damage, not a file of ours (128k rows on a grid of 1 is 1 MiB).
inline constexpr std::uint64_t max_header_bytes = 64ULL << 20;

inline std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

inline std::optional<std::uint64_t> parse_hex16(const std::string& s) {
  if (s.size() != 16) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}

inline bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
inline bool ends_with(const std::string& s, const char* p) {
  const std::string q(p);
  return s.size() >= q.size() && s.compare(s.size() - q.size(), q.size(), q) == 0;
}

// The hash in "<prefix><16 hex><suffix>", or nullopt.
inline std::optional<std::uint64_t> name_hash(const std::string& name, const char* prefix, const char* suffix) {
  const std::string p(prefix), s(suffix);
  if (!starts_with(name, prefix) || !ends_with(name, suffix) || name.size() != p.size() + 16 + s.size())
    return std::nullopt;
  return parse_hex16(name.substr(p.size(), 16));
}

// A namespace names a folder: short, plain characters, and not the default's folder name.
inline bool valid_ns(const std::string& ns) {
  if (ns.empty()) return true;
  if (ns.size() > 64 || ns == default_ns_dir) return false;
  return std::all_of(ns.begin(), ns.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  }) && ns != "." && ns != "..";
}

// "g-<16 hex>-<10 digits>.gen" -> (key hash, rows)
inline std::optional<std::pair<std::uint64_t, std::size_t>> parse_checkpoint_name(const std::string& name) {
  const std::size_t n = std::string(checkpoint_prefix).size() + 16 + 1 + 10 + std::string(checkpoint_suffix).size();
  if (name.size() != n || !starts_with(name, checkpoint_prefix) || !ends_with(name, checkpoint_suffix) || name[18] != '-')
    return std::nullopt;
  auto key = parse_hex16(name.substr(2, 16));
  if (!key) return std::nullopt;
  std::size_t rows = 0;
  for (char c : name.substr(19, 10)) {
    if (c < '0' || c > '9') return std::nullopt;
    rows = rows * 10 + static_cast<std::size_t>(c - '0');
  }
  return std::make_pair(*key, rows);
}

// A checkpoint's eviction id: its name's hash, apart from the prefix hashes chunks use.
inline std::uint64_t checkpoint_id(const std::string& name) {
  return XXH3_64bits(name.data(), name.size()) ^ 0x67656e6572ULL;
}

// Reads the header of a chunk, anchor or checkpoint file: the fixed part, then header_bytes
// (offset 16 in every format). nullopt when the file is shorter or the size is absurd.
inline std::optional<std::vector<unsigned char>> read_header_bytes(file_env& env, const std::string& path,
                                                                   std::size_t fixed) {
  std::vector<unsigned char> h(fixed);
  if (!env.read(path, 0, h.data(), fixed)) return std::nullopt;
  const std::uint64_t hb = get_u32(h.data() + df::chunk_offset::header_bytes);
  if (hb < fixed || hb > max_header_bytes) return std::nullopt;
  h.resize(hb);
  if (hb > fixed && !env.read(path, fixed, h.data() + fixed, hb - fixed)) return std::nullopt;
  return h;
}

}  // namespace anchorage::disk_store_detail
