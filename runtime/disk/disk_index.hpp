#pragma once
// The durable store's index (runtime/disk/disk_store.hpp): which chunk, anchor and checkpoint
// files are on disk, what they hold, and the eviction bookkeeping over them. No I/O at all: the
// store does the reading, writing and deleting and tells the index; the index answers lookups
// and says which paths leave with an entry. Testable with no file (tests/disk/test_disk_index.cpp).
//
// Ids (runtime/disk/disk_names.hpp): a chunk's is its prefix hash, an anchor's
// disk_names::anchor_id(ns, key), a checkpoint's disk_names::checkpoint_id. Lines are grid lines,
// or lines right after an image off the grid (docs/DISK_FORMAT.md, "Version 4"). Invariants:
//   - a chunk at line b > grid has its parent (the chunk at the grid line below b: b - grid, or
//     b - b mod grid off the grid) indexed; one at or below the first line has none;
//   - an anchor's chain (the chunk hashes at grid, 2 grid, ..., and at its line when that is off
//     the grid) ends in its key, and the chunk at its line (its eviction parent) is indexed when
//     it is added;
//   - removing an entry removes everything that stands on it (disk_eviction's tree), so an
//     anchor whose chain lost a chunk is gone with it.
// A lookup still checks each anchor's whole chain and its key against the prompt's hashes: the
// hashes name the files; a 64-bit collision is caught by the read's token check.
//
// Not thread-safe: one owner (the store's).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/disk/disk_eviction.hpp"

namespace anchorage {

// An anchor the index can restore: every chunk below it is indexed.
struct disk_hit {
  std::string ns;
  std::size_t line = 0;          // the prefix length it restores (a grid line, or an image's end)
  std::uint64_t read_bytes = 0;  // the bytes a restore reads: its chunks and the anchor
};

// The longest checkpoint of a generation key.
struct disk_checkpoint_hit {
  std::uint64_t key_hash = 0;
  std::size_t rows = 0;  // the state's length: prompt + output ids - 1
  std::uint64_t bytes = 0;
};

struct disk_chunk_entry {
  std::size_t line = 0;
  std::uint64_t parent = 0;  // the prefix hash at the grid line below; 0 at or below the first
  std::uint64_t bytes = 0;
};
struct disk_anchor_entry {
  std::string ns;
  std::size_t line = 0;
  std::vector<std::uint64_t> chain;  // chunk hashes at grid, 2 grid, ..., (and) line
  std::uint64_t bytes = 0;
  std::uint64_t read_bytes = 0;  // what a restore reads: bytes and every chunk of the chain
};
struct disk_checkpoint_entry {
  std::uint64_t key_hash = 0;
  std::size_t rows = 0;
  std::uint64_t bytes = 0;
};

class disk_index {
 public:
  // `clock` must outlive the index. grid > 0.
  disk_index(std::size_t grid, const eviction_clock& clock, disk_eviction_options options);

  // ---- Entries ------------------------------------------------------------------------------
  // Each add takes the file's path and its last use. False, and nothing changed, when the id is
  // already indexed, what it stands on is not, or bytes is 0.
  // A chunk at `line` (> 0: a grid line, or a line off it holding the rows from the grid line
  // below); `parent`, the chunk at that grid line, is ignored at or below the first line.
  bool add_chunk(std::uint64_t hash, std::size_t line, std::uint64_t parent, std::uint64_t bytes,
                 std::int64_t last_use_s, std::string path);
  // An anchor of `ns` at the line of its key's chunk (chain.back()); the whole chain must be
  // indexed, its chunks at grid, 2 grid, ... and the key's, chain_length(line) of them.
  bool add_anchor(const std::string& ns, std::vector<std::uint64_t> chain, std::uint64_t bytes,
                  std::int64_t last_use_s, std::string path);
  // A checkpoint of `key_hash` at `rows`. A checkpoint already indexed under the same name is
  // replaced (a rewrite of the same point), keeping its eviction entry; true then too.
  bool add_checkpoint(std::uint64_t key_hash, std::size_t rows, std::uint64_t bytes, std::int64_t last_use_s,
                      std::string path);
  // Removes the entry and everything standing on it; returns the paths that left the index
  // (the files the caller deletes), descendants first. Empty for an unknown id.
  std::vector<std::string> remove(std::uint64_t id);
  // Forgets every entry; a new epoch begins. The in-flight marks and pending bytes stay: the
  // writes in flight still commit (and find their epoch stale).
  void clear();
  // How many times clear() ran: a write planned in an earlier epoch is stale.
  std::uint64_t epoch() const { return epoch_; }

  // ---- Lookups ------------------------------------------------------------------------------
  // The longest usable anchor of `ns` for `prompt` at a line <= prompt.size() - 1 whose key is
  // the prompt's prefix hash there (a hash match: the read checks the ids) and that is not
  // inside an image's first image_key_rows rows (ends_in_image_key_rows); nullopt when none.
  // The lines tried: every grid line, and the end of every image of the prompt.
  std::optional<disk_hit> find(const std::vector<token_id>& prompt, const std::string& ns = "") const;
  // The anchor of `ns` at exactly tokens.size(); nullopt when none.
  std::optional<disk_hit> find_exact(const std::vector<token_id>& tokens, const std::string& ns = "") const;
  // The longest line of any usable anchor, any namespace; 0 when none. Kept as anchors come and
  // go (every indexed anchor is usable: removing a chunk removes what stands on it), so the
  // stats published after each change cost no walk over the anchors.
  std::size_t longest_durable_prefix_tokens() const;
  // Every usable anchor (its chain indexed), in no particular order.
  std::vector<const disk_anchor_entry*> usable_anchors() const;
  std::optional<disk_checkpoint_hit> find_checkpoint(std::uint64_t key_hash) const;
  // The ids of every checkpoint of `key_hash`.
  std::vector<std::uint64_t> checkpoints_of(std::uint64_t key_hash) const;

  bool has_chunk(std::uint64_t hash) const { return chunks_.count(hash) != 0; }
  bool has_anchor(std::uint64_t id) const { return anchors_.count(id) != 0; }
  bool has_checkpoint(std::uint64_t id) const { return checkpoints_.count(id) != 0; }
  bool chain_indexed(const std::vector<std::uint64_t>& chain) const;
  const disk_chunk_entry* chunk(std::uint64_t hash) const;
  const disk_anchor_entry* anchor(std::uint64_t id) const;
  const disk_checkpoint_entry* checkpoint(std::uint64_t id) const;
  // The path of an indexed entry; null for an unknown id.
  const std::string* path(std::uint64_t id) const;
  // The path of every indexed entry.
  std::vector<std::string> all_paths() const;

  // The anchors of the same namespace that `id` (an indexed anchor) supersedes: those at lower
  // grid lines whose key lies on its chain (one off the grid lies on no other anchor's chain).
  std::vector<std::uint64_t> superseded_by(std::uint64_t id) const;
  // The checkpoints of `key_hash` at fewer rows than `rows`.
  std::vector<std::uint64_t> older_checkpoints(std::uint64_t key_hash, std::size_t rows) const;

  std::size_t entries() const { return anchors_.size(); }
  // The bytes of the files the anchors stand on (each anchor's own and every chunk some anchor's
  // chain names, once), and the sum of every anchor's read_bytes: what the anchors would hold
  // were each stored whole, without the chunks they share. A chunk no anchor names counts in
  // neither. Kept as entries come and go.
  std::uint64_t anchor_files_bytes() const { return anchor_files_bytes_; }
  std::uint64_t anchored_bytes() const { return anchored_bytes_; }
  std::size_t chunk_count() const { return chunks_.size(); }
  std::size_t checkpoint_count() const { return checkpoints_.size(); }

  // ---- Writes in flight ---------------------------------------------------------------------
  // A file prepared and not committed yet: a second write skips it. Counted, so two marks need
  // two releases.
  void mark_in_flight(std::uint64_t id) { ++in_flight_[id]; }
  void release_in_flight(std::uint64_t id);
  // Drops every mark (a rescan: nothing is in flight for the files it found).
  void forget_in_flight() { in_flight_.clear(); }
  bool in_flight(std::uint64_t id) const { return in_flight_.count(id) != 0; }
  // Indexed or being written.
  bool known_chunk(std::uint64_t hash) const { return has_chunk(hash) || in_flight(hash); }
  // Bytes planned and not committed: the budget counts them.
  std::uint64_t pending_bytes() const { return pending_bytes_; }
  void add_pending(std::uint64_t bytes) { pending_bytes_ += bytes; }
  void release_pending(std::uint64_t bytes) { pending_bytes_ -= std::min(pending_bytes_, bytes); }

  // ---- Eviction bookkeeping -----------------------------------------------------------------
  // A restore used the entry: one more hit, last use now.
  void touch(std::uint64_t id) { eviction_->touch(id); }
  // disk_eviction::plan_evictions over the index.
  std::vector<std::uint64_t> plan_evictions(std::uint64_t free_bytes, std::uint64_t incoming_bytes = 0,
                                            const std::unordered_set<std::uint64_t>& keep = {}) const {
    return eviction_->plan_evictions(free_bytes, incoming_bytes, keep);
  }
  bool contains(std::uint64_t id) const { return eviction_->contains(id); }
  // The eviction policy's record of an entry (null when unknown) and its value now.
  const eviction_entry* eviction_record(std::uint64_t id) const { return eviction_->find(id); }
  double value(std::uint64_t id) const { return eviction_->value(id); }
  std::uint64_t held_bytes() const { return eviction_->held_bytes(); }
  const disk_eviction_options& eviction_options() const { return options_; }
  // New limits for the policy (disk_eviction::set_options); evicts nothing.
  void set_eviction_options(const disk_eviction_options& o) {
    options_ = o;
    eviction_->set_options(o);
  }
  std::size_t grid() const { return grid_; }

 private:
  disk_hit hit_of(const disk_anchor_entry& a) const;

  std::size_t grid_;
  const eviction_clock& clock_;
  disk_eviction_options options_;
  std::unique_ptr<disk_eviction> eviction_;
  std::unordered_map<std::uint64_t, disk_chunk_entry> chunks_;            // by prefix hash
  std::unordered_map<std::uint64_t, disk_anchor_entry> anchors_;          // by anchor id
  std::map<std::size_t, std::size_t> anchor_lines_;                       // line -> anchors there
  std::unordered_map<std::uint64_t, disk_checkpoint_entry> checkpoints_;  // by checkpoint id
  std::unordered_map<std::uint64_t, std::string> paths_;                  // id -> file path
  std::unordered_map<std::uint64_t, int> in_flight_;
  std::uint64_t pending_bytes_ = 0;
  std::unordered_map<std::uint64_t, std::pair<std::size_t, std::uint64_t>>
      chain_refs_;  // chunk -> anchors naming it, its bytes
  std::uint64_t anchor_files_bytes_ = 0, anchored_bytes_ = 0;
  std::uint64_t epoch_ = 0;
};

}  // namespace anchorage
