#pragma once
// The session spill's catalog (runtime/spill/spill_store.hpp): which block and anchor files are
// on disk or being written, how many manifests name each (refs) and how many prepared writes
// rely on each (pins), and the manifests with their last use. No I/O: the operations that can
// leave a file unneeded return it ("dead": present, no ref, no pin) and the store deletes it.
//
// Not thread-safe: one owner (the store).
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "runtime/spill/spill_image.hpp"

namespace anchorage {

enum class spill_file_kind : std::uint8_t { block, anchor };

// A block or anchor file by its name (the two families are kept apart).
struct spill_file_key {
  spill_file_kind kind = spill_file_kind::block;
  std::uint64_t name = 0;
  bool operator<(const spill_file_key& o) const { return kind != o.kind ? kind < o.kind : name < o.name; }
  bool operator==(const spill_file_key& o) const { return kind == o.kind && name == o.name; }
};

// Every file a manifest names, once each.
std::set<spill_file_key> spill_files_of(const spill_manifest& m);

class spill_index {
 public:
  struct file_entry {
    std::uint64_t bytes = 0;
    std::size_t refs = 0;  // indexed manifests naming it
    std::size_t pins = 0;  // prepared writes naming it (the one writing it included)
    bool present = false;  // renamed into place; false while a prepared write writes it
  };
  struct manifest_entry {
    spill_manifest manifest;
    std::vector<unsigned char> encoded;  // the manifest file's bytes
    std::set<spill_file_key> files;
    std::uint64_t last_use = 0;  // larger: more recent
  };

  // ---- Files ----------------------------------------------------------------------------------
  const file_entry* file(const spill_file_key& k) const;
  // Present or being written.
  bool held(const spill_file_key& k) const { return file(k) != nullptr; }
  bool present(const spill_file_key& k) const;
  // A new entry, present (a scan, no refs or pins) or in flight (a prepared write, one pin).
  // False when the key is there already.
  bool add_file(const spill_file_key& k, std::uint64_t bytes, bool present);
  // An in-flight file renamed into place.
  void set_present(const spill_file_key& k);
  // Forgets a file (its write failed, its bytes were bad, it was deleted).
  void erase_file(const spill_file_key& k);
  void pin(const spill_file_key& k);
  // Releases one pin; true when the file is now dead. A key not indexed is ignored.
  bool unpin(const spill_file_key& k);
  bool dead(const spill_file_key& k) const;

  // ---- Manifests ------------------------------------------------------------------------------
  const manifest_entry* find(std::uint64_t id) const;
  // Indexes `m` (every file it names must be present), replacing the manifest of its id if any;
  // returns the files that became dead (named only by the one replaced).
  std::vector<spill_file_key> install(spill_manifest m, std::vector<unsigned char> encoded,
                                      std::uint64_t last_use);
  // Drops manifest `id`; returns the files that became dead. Empty when not indexed.
  std::vector<spill_file_key> remove_manifest(std::uint64_t id);
  // The manifests naming `k`.
  std::vector<std::uint64_t> manifests_naming(const spill_file_key& k) const;
  void set_last_use(std::uint64_t id, std::uint64_t last_use);
  // Every manifest, least recently used first.
  std::vector<const manifest_entry*> by_last_use() const;

  // Empties the manifests and the present files; in-flight files stay (their writers commit).
  void clear_present();
  void clear();

  // ---- Sizes ----------------------------------------------------------------------------------
  std::uint64_t held_bytes() const { return held_bytes_; }            // present files and manifests
  std::uint64_t in_flight_bytes() const { return in_flight_bytes_; }  // files being written
  std::size_t manifest_count() const { return manifests_.size(); }
  std::size_t present_count(spill_file_kind kind) const;

 private:
  std::map<spill_file_key, file_entry> files_;
  std::map<std::uint64_t, manifest_entry> manifests_;
  std::uint64_t held_bytes_ = 0, in_flight_bytes_ = 0;
};

}  // namespace anchorage
