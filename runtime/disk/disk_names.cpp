#include "runtime/disk/disk_names.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>

#include "runtime/io/file_env.hpp"

namespace anchorage {
namespace {

constexpr const char* chunk_prefix = "c-";
constexpr const char* chunk_suffix = ".chk";
constexpr const char* anchor_prefix = "a-";
constexpr const char* anchor_suffix = ".anc";
constexpr const char* ns_prefix = "n-";
constexpr const char* checkpoint_prefix = "g-";
constexpr const char* checkpoint_suffix = ".gen";
constexpr const char* default_ns_dir = "_";

std::optional<std::uint64_t> parse_hex16(const std::string& s) {
  if (s.size() != 16) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& q) {
  return s.size() >= q.size() && s.compare(s.size() - q.size(), q.size(), q) == 0;
}

// The hash in "<prefix><16 hex><suffix>", or nullopt.
std::optional<std::uint64_t> name_hash(const std::string& name, const std::string& prefix,
                                       const std::string& suffix) {
  if (!starts_with(name, prefix) || !ends_with(name, suffix) ||
      name.size() != prefix.size() + 16 + suffix.size())
    return std::nullopt;
  return parse_hex16(name.substr(prefix.size(), 16));
}

}  // namespace

disk_names::disk_names(const std::string& dir, std::uint64_t fingerprint)
    : folder_(join_path(dir, hex16(fingerprint))) {}

std::string disk_names::hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string disk_names::chunk_name(std::uint64_t hash) const {
  return chunk_prefix + hex16(hash) + chunk_suffix;
}
std::string disk_names::chunk_path(std::uint64_t hash) const { return join_path(folder_, chunk_name(hash)); }

std::string disk_names::anchor_dir(const std::string& ns) const {
  return join_path(folder_, ns_prefix + (ns.empty() ? std::string(default_ns_dir) : ns));
}
std::string disk_names::anchor_name(std::uint64_t key) const {
  return anchor_prefix + hex16(key) + anchor_suffix;
}
std::string disk_names::anchor_path(const std::string& ns, std::uint64_t key) const {
  return join_path(anchor_dir(ns), anchor_name(key));
}

std::string disk_names::checkpoint_name(std::uint64_t key_hash, std::size_t rows) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%010llu", static_cast<unsigned long long>(rows));
  return checkpoint_prefix + hex16(key_hash) + "-" + buf + checkpoint_suffix;
}
std::string disk_names::checkpoint_path(std::uint64_t key_hash, std::size_t rows) const {
  return join_path(folder_, checkpoint_name(key_hash, rows));
}

std::optional<std::uint64_t> disk_names::chunk_hash_of(const std::string& name) {
  return name_hash(name, chunk_prefix, chunk_suffix);
}
std::optional<std::uint64_t> disk_names::anchor_key_of(const std::string& name) {
  return name_hash(name, anchor_prefix, anchor_suffix);
}

std::optional<std::pair<std::uint64_t, std::size_t>> disk_names::checkpoint_of(const std::string& name) {
  const std::string p(checkpoint_prefix), q(checkpoint_suffix);
  const std::size_t n = p.size() + 16 + 1 + 10 + q.size();
  if (name.size() != n || !starts_with(name, p) || !ends_with(name, q) || name[p.size() + 16] != '-')
    return std::nullopt;
  auto key = parse_hex16(name.substr(p.size(), 16));
  if (!key) return std::nullopt;
  std::size_t rows = 0;
  for (char c : name.substr(p.size() + 17, 10)) {
    if (c < '0' || c > '9') return std::nullopt;
    rows = rows * 10 + static_cast<std::size_t>(c - '0');
  }
  return std::make_pair(*key, rows);
}

std::optional<std::string> disk_names::namespace_of_dir(const std::string& name) {
  if (!starts_with(name, ns_prefix)) return std::nullopt;
  const std::string dir_ns = name.substr(std::string(ns_prefix).size());
  std::string ns = dir_ns == default_ns_dir ? std::string() : dir_ns;
  if (!valid_ns(ns)) return std::nullopt;
  return ns;
}

std::optional<std::uint64_t> disk_names::fingerprint_of_dir(const std::string& name) {
  return parse_hex16(name);
}

bool disk_names::valid_ns(const std::string& ns) {
  if (ns.empty()) return true;
  if (ns.size() > 64 || ns == default_ns_dir) return false;
  return std::all_of(ns.begin(), ns.end(),
                     [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                              c == '_' || c == '-' || c == '.';
                     }) &&
         ns != "." && ns != "..";
}

std::uint64_t disk_names::anchor_id(const std::string& ns, std::uint64_t key) {
  // Distinct from the chunk ids (the bare prefix hashes) and across namespaces.
  return XXH3_64bits_withSeed(ns.data(), ns.size(), key ^ 0x616e63686f72ULL);
}

std::uint64_t disk_names::checkpoint_id(std::uint64_t key_hash, std::size_t rows) {
  // The id of its name's hash, as the scan and the writes have always computed it.
  const std::string name = checkpoint_name(key_hash, rows);
  return XXH3_64bits(name.data(), name.size()) ^ 0x67656e6572ULL;
}

}  // namespace anchorage
