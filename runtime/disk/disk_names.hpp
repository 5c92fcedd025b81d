#pragma once
// How the durable store names its files (runtime/disk/disk_store.hpp), and nothing else: paths
// from hashes and back, namespace validation, and the 64-bit ids the index and the eviction
// policy know the files by. No I/O.
//
//   <folder>/c-<prefix hash, 16 hex>.chk                  a chunk file
//   <folder>/n-<namespace>/a-<prefix hash, 16 hex>.anc    an anchor of that namespace ("n-_" is
//                                                          the default namespace "")
//   <folder>/g-<key hash, 16 hex>-<rows, 10 digits>.gen   a generation checkpoint
//
// where <folder> is <dir>/<layout fingerprint, 16 hex>. Ids: a chunk's is its prefix hash, an
// anchor's anchor_id(ns, key), a checkpoint's checkpoint_id(name): three disjoint families in
// practice (distinct seeds of XXH3).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace anchorage {

class disk_names {
 public:
  // `dir` is the tier's root; the store's own folder is dir/<fingerprint as 16 hex digits>.
  disk_names(const std::string& dir, std::uint64_t fingerprint);

  const std::string& folder() const { return folder_; }

  std::string chunk_name(std::uint64_t hash) const;
  std::string chunk_path(std::uint64_t hash) const;
  // The anchors' folder of `ns` (which must be valid_ns).
  std::string anchor_dir(const std::string& ns) const;
  std::string anchor_name(std::uint64_t key) const;
  std::string anchor_path(const std::string& ns, std::uint64_t key) const;
  static std::string checkpoint_name(std::uint64_t key_hash, std::size_t rows);
  std::string checkpoint_path(std::uint64_t key_hash, std::size_t rows) const;

  // Parsing names found in the folder. Each returns nullopt for any other name.
  static std::optional<std::uint64_t> chunk_hash_of(const std::string& name);
  static std::optional<std::uint64_t> anchor_key_of(const std::string& name);
  // (key hash, rows) of a checkpoint name.
  static std::optional<std::pair<std::uint64_t, std::size_t>> checkpoint_of(const std::string& name);
  // The namespace a folder name "n-..." holds ("n-_" -> ""); nullopt for other names and
  // namespaces that are not valid_ns.
  static std::optional<std::string> namespace_of_dir(const std::string& name);
  // The fingerprint a store folder's name (16 hex digits) gives; nullopt for any other name.
  static std::optional<std::uint64_t> fingerprint_of_dir(const std::string& name);

  // A namespace names a folder: empty (the default), or up to 64 of [A-Za-z0-9_.-], not "_"
  // (the default's folder), "." or "..".
  static bool valid_ns(const std::string& ns);

  // The index ids.
  static std::uint64_t anchor_id(const std::string& ns, std::uint64_t key);
  static std::uint64_t checkpoint_id(std::uint64_t key_hash, std::size_t rows);

  static std::string hex16(std::uint64_t v);

 private:
  std::string folder_;
};

}  // namespace anchorage
