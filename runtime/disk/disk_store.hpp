#pragma once
// The durable prefix store (seed 003, SsdCacheStore; issue 6 items 1, 2, 6, 7) over the chunk and
// anchor files of runtime/disk/disk_codec.hpp, through the file-system seam (runtime/io/file_env.hpp).
//
// Directory: everything lives in `<dir>/<fingerprint as 16 hex digits>/`, our own folder:
//   c-<prefix hash hex>.chk               a chunk file (rows [b - grid, b) and their ids)
//   n-<namespace>/a-<prefix hash hex>.anc an anchor file of that namespace ("n-_" holds the
//                                         default namespace ""; a name outside [A-Za-z0-9_.-]
//                                         or longer than 64 is refused)
//   g-<key hash hex>-<rows, 10 digits>.gen a generation checkpoint (runtime/disk/checkpoint_codec.hpp)
// Chunks are shared by every namespace: two prompts that share 30 lines share 30 chunk files.
// Nothing outside our folder is ever touched (another model's folder stays as it is).
//
// Integrity (invariants 3, 5): every file is written by file_env::write_atomic (tmp, fsync,
// rename, directory fsync). A restore reads and verifies every file it needs (token ids against
// the prompt, every crc) before a byte reaches the engine; a file that fails is deleted with
// everything above it in its chain (the longer chunks, the anchors on them) and the restore
// reports failure, the engine untouched. No I/O failure throws: a write that fails is a soft
// failure (warned once on stderr, counted) and serving goes on.
//
// The index is in memory, rebuilt by scan() from headers alone: .tmp orphans reaped, files of
// another fingerprint or grid, with a bad header, of the wrong length or whose chain parent is
// missing deleted. Other names are left alone. Lookups (find, find_exact, has_durable_prefix, longest_durable_prefix_tokens)
// are pure index work, no I/O: the hashes name the files, the read's token check catches a
// 64-bit collision.
//
// Budget: disk_eviction (runtime/disk/disk_eviction.hpp) over every file, an anchor's parent being
// the chunk at its line and a chunk's the chunk below it. Room is made before a write (the
// bytes are known before anything is encoded); an entry larger than the entry cap is refused.
//
// Not thread-safe: one owner. In the server the board owns the store; the disk writer actor
// runs the writes (see actors/disk_writer.hpp) on its own env and reports what it wrote.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.hpp"
#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_eviction.hpp"
#include "runtime/io/file_env.hpp"
#include "runtime/disk/staged_state.hpp"
#include "runtime/engine/state_adapter.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

struct disk_store_options {
  std::string dir;                  // the tier's root; the store works in dir/<fingerprint hex>
  disk_eviction_options eviction;   // budget (--disk-cache-gb), lifetime, free-space floor
  std::uint64_t entry_max_bytes = 0;  // one write's largest size; 0: the budget
};

// What scan() found.
struct disk_scan_report {
  std::size_t indexed = 0;         // files indexed
  std::size_t tmp_reaped = 0;      // .tmp orphans removed
  std::size_t foreign_swept = 0;   // files of another fingerprint or grid removed
  std::size_t damaged_removed = 0; // bad headers, wrong lengths, missing parents
};

// An anchor the index can restore: every chunk below it is indexed.
struct disk_hit {
  std::string ns;
  std::size_t line = 0;          // the prefix length it restores (a multiple of the grid)
  std::uint64_t read_bytes = 0;  // the bytes a restore reads: its chunks and the anchor
};

// What one write did.
struct disk_write_report {
  std::size_t chunks_written = 0;
  std::size_t chunks_present = 0;  // already indexed (or being written), not written again
  std::size_t anchors_written = 0;
  std::size_t superseded = 0;
  std::uint64_t bytes_written = 0;
  bool refused = false;            // over the entry cap or no room: nothing written
  bool failed = false;             // a file failed to write (the rest of the write was dropped)
  std::string error;               // what failed, when refused or failed
};

// One file of a write, as the store decided it.
struct disk_file_job {
  bool anchor = false;          // an anchor file; otherwise a chunk file (or the checkpoint)
  bool checkpoint = false;      // the plan's generation checkpoint
  std::size_t line = 0;
  std::size_t anchor_index = 0; // which of the staged anchors (anchor files)
  std::string dir, name;
};
// What prepare() decided: the files to write, in order.
struct disk_write_plan {
  std::vector<disk_file_job> files;
  std::optional<checkpoint_meta> checkpoint;  // a checkpoint write: its meta (sections staged as
                                              // anchors[0], rows [0, rows) staged)
  std::size_t chunks_present = 0;
  std::uint64_t bytes = 0;
  std::uint64_t epoch = 0;      // the store's clear() count when planned
  std::uint64_t pending = 0;    // bytes counted as in flight until commit()
  bool refused = false;
  std::string error;
};
struct disk_file_result {
  bool ok = false;
  std::uint64_t bytes = 0;
  std::string error;
};

// A prefix restore read and verified, not applied yet (disk_store::read_verified): the bytes of
// every chunk file of the chain and of the anchor file, and views into them. Move-only; the views
// stay valid while it lives (the buffers are on the heap and move with it).
struct verified_read {
  std::size_t line = 0;            // the length it restores
  std::uint64_t bytes_read = 0;
  std::vector<std::unique_ptr<unsigned char[]>> buffers;  // one per file, the anchor's last
  std::vector<chunk_view> chunks;  // chunks[i]: rows [i grid, (i + 1) grid)
  anchor_view anchor;

  verified_read() = default;
  verified_read(verified_read&&) = default;
  verified_read& operator=(verified_read&&) = default;
};

// A generation checkpoint read and verified, not applied yet (disk_store::read_checkpoint_verified).
struct verified_checkpoint {
  checkpoint_read read;  // read.meta: the ids, the seed
  std::uint64_t bytes_read = 0;
};

// Encodes and writes the plan's files in order through `env`, stopping at the first failure
// (the results then end with it). Touches no index: what the disk writer actor runs, on its own
// env, while the board serves.
std::vector<disk_file_result> execute_disk_write(file_env& env, const state_layout& layout,
                                                 const staged_write& w, const disk_write_plan& plan);

class disk_store {
 public:
  // Does no I/O: call scan() before anything else. `env` and `clock` must outlive the store.
  disk_store(file_env& env, const state_layout& layout, const eviction_clock& clock,
             disk_store_options options);

  // Startup recovery (seed 003 scan): creates our folder, reaps .tmp orphans, sweeps files of
  // another fingerprint or grid and damaged ones (inside our folder only), and rebuilds the index
  // from headers alone, last use = the file's modification time. Drops every earlier index entry.
  disk_scan_report scan();

  // ---- Writes -------------------------------------------------------------------------------
  // Writes a staged write: first room (evictions planned for its bytes), then each chunk in
  // ascending order that is not indexed, then each anchor whose whole chain is indexed. Stops at
  // the first file that fails (a later chunk would have no parent). An anchor on a line with
  // supersede set removes the namespace's anchors at lower lines of the same chain.
  disk_write_report write(const staged_write& w);
  // write() in three steps, for a writer elsewhere: prepare() makes room and decides the files
  // (marking them in flight so a second write skips them), execute_disk_write() writes them,
  // commit() indexes what was written; a file whose chain lost a part meanwhile (an eviction, a
  // failed restore, a clear) is deleted instead. Every prepare() must be committed (with the
  // results, possibly none) to release its in-flight marks.
  disk_write_plan prepare(const staged_write& w);
  disk_write_report commit(const staged_write& w, const disk_write_plan& plan,
                           const std::vector<disk_file_result>& results);

  // store() of seed 003: persists the state `from` holds (sections at line =
  // from.valid_length(), which must be a positive multiple of the grid, rows [0, line)) as an
  // anchor of `ns` for tokens[0, line), its missing chunks included, superseding the
  // namespace's anchors whose tokens are a prefix of it. False when refused or failed.
  bool store(const std::vector<token_id>& tokens, const state_adapter& from, const std::string& ns = "");

  // ---- Lookups (index only, no I/O) ----------------------------------------------------------
  // The longest usable anchor of `ns` for `prompt`: line <= prompt.size() - 1 (at least one
  // token forwards), its key equal to the prompt's prefix hash at that line, every chunk below
  // it indexed. Longer anchors would need their sections trimmed, which sections cannot be:
  // skipped. nullopt when none.
  std::optional<disk_hit> find(const std::vector<token_id>& prompt, const std::string& ns = "") const;
  // The anchor of `ns` at exactly tokens.size() (on the grid), with its chain; nullopt when none.
  std::optional<disk_hit> find_exact(const std::vector<token_id>& tokens, const std::string& ns = "") const;
  // True when the index can seed every token of `tokens`: find_exact finds it.
  bool has_durable_prefix(const std::vector<token_id>& tokens, const std::string& ns = "") const;
  // The longest line of any usable anchor, any namespace; 0 when none.
  std::size_t longest_durable_prefix_tokens() const;
  // The token ids of every usable anchor, read from the chunk files' headers and token blocks
  // (no rows, no sections), shortest first. A file that cannot be read is skipped.
  std::vector<std::vector<token_id>> token_prefixes();

  // ---- Restore -------------------------------------------------------------------------------
  // Reads hit's chunks and anchor, verifies every one against `prompt` (which holds at least
  // hit.line ids) and the layout, and only then writes rows [0, line) and every section into
  // `into` and sets its valid length to hit.line. Counts a hit (eviction: hits + 1, last use
  // now). On any failure: the failing file and everything above it in its chain are deleted,
  // `into` is untouched, and the result names what failed.
  struct restore_result {
    bool ok = false;
    std::string error;
    std::uint64_t bytes_read = 0;
  };
  restore_result restore(const disk_hit& hit, const std::vector<token_id>& prompt, state_adapter& into);
  // restore() in two steps, so the reading and checking can happen off the engine's owner:
  // read_verified() reads and verifies every file as restore() does and counts the hit (or, on
  // failure, deletes the broken chain and names what failed) without touching any engine;
  // apply_verified() then writes the bytes into `into` (rows [0, line), every section, valid
  // length = line). It touches no store, so whoever owns the engine calls it.
  expected<verified_read> read_verified(const disk_hit& hit, const std::vector<token_id>& prompt);
  static void apply_verified(const verified_read& read, state_adapter& into);

  // ---- Generation checkpoints (seed 003 storeGenerationCheckpoint) ---------------------------
  // A checkpoint is one self-contained file (runtime/disk/checkpoint_codec.hpp) in its own namespace:
  // it never seeds a prefill. A newer checkpoint of the same key supersedes the older ones only
  // once its rename succeeded, so a crash during its write leaves the previous one.
  struct checkpoint_hit {
    std::uint64_t key_hash = 0;
    std::size_t rows = 0;  // the state's length: prompt + output ids - 1
    std::uint64_t bytes = 0;
  };
  // Writes `meta` with the state `from` holds (valid length = meta.tokens.size() - 1).
  bool store_checkpoint(const checkpoint_meta& meta, const state_adapter& from);
  // prepare()/commit() for a checkpoint staged in w (rows [0, rows), sections as anchors[0]).
  disk_write_plan prepare_checkpoint(const staged_write& w, const checkpoint_meta& meta);
  // The longest checkpoint of `key_hash`; nullopt when none. Index only.
  std::optional<checkpoint_hit> find_checkpoint(std::uint64_t key_hash) const;
  // Reads and verifies it against `prompt` and the key, then writes the whole state into `into`;
  // the meta comes back in `meta`. On failure the file is deleted and `into` untouched.
  restore_result restore_checkpoint(const checkpoint_hit& hit, const std::vector<token_id>& prompt,
                                    state_adapter& into, checkpoint_meta& meta);
  // restore_checkpoint() in two steps, as read_verified() / apply_verified().
  expected<verified_checkpoint> read_checkpoint_verified(const checkpoint_hit& hit,
                                                         const std::vector<token_id>& prompt);
  static void apply_checkpoint_verified(const verified_checkpoint& read, state_adapter& into);
  // Deletes every checkpoint of the key (the generation finished).
  std::size_t remove_checkpoints(std::uint64_t key_hash);
  std::size_t checkpoint_count() const { return checkpoints_.size(); }

  // ---- Maintenance ---------------------------------------------------------------------------
  // Deletes what the eviction policy names (lifetime, budget, free-space floor); returns the
  // number of files deleted.
  std::size_t evict_to_cap();
  // Deletes every file of our folder (chunks, anchors, checkpoints) and empties the index.
  std::size_t clear();

  // Per-store counters and sizes for /v1/cache/stats.
  nlohmann::json stats() const;

  std::size_t entries() const;     // anchors indexed, every namespace
  std::size_t chunk_count() const { return chunks_.size(); }
  bool has_chunk(std::uint64_t prefix_hash) const { return chunks_.count(prefix_hash) != 0; }
  std::uint64_t total_bytes() const { return eviction_->held_bytes(); }
  std::uint64_t max_bytes() const { return options_.eviction.budget_bytes; }
  const std::string& folder() const { return folder_; }
  // The bytes a staged write would add: its chunks and anchors not indexed yet.
  std::uint64_t bytes_needed(const staged_write& w) const;
  const state_layout& layout() const { return layout_; }
  file_env& env() { return env_; }


 private:
  struct chunk_entry {
    std::size_t line = 0;
    std::uint64_t parent = 0;  // the prefix hash at line - grid; 0 at the first line
    std::uint64_t bytes = 0;
  };
  struct anchor_entry {
    std::string ns;
    std::size_t line = 0;
    std::vector<std::uint64_t> chain;  // chunk hashes at grid, 2 grid, ..., line
    std::uint64_t bytes = 0;
  };

  std::string chunk_path(std::uint64_t hash) const;
  std::string anchor_dir(const std::string& ns) const;
  std::string anchor_path(const std::string& ns, std::uint64_t key) const;
  static std::uint64_t anchor_id(const std::string& ns, std::uint64_t key);
  bool chain_indexed(const std::vector<std::uint64_t>& chain) const;
  // Deletes an eviction id and its descendants, files and index entries; returns files deleted.
  std::size_t drop(std::uint64_t id);
  void warn_once(const std::string& what);
  bool known_chunk(std::uint64_t hash) const;
  // The prefix hash at every line the write's tokens reach (grid, 2 grid, ...), in one pass.
  std::vector<std::uint64_t> line_hashes(const staged_write& w) const;
  // Refuses a plan over the entry cap, or makes room for it (never evicting `keep`).
  void make_room(disk_write_plan& p, const std::unordered_set<std::uint64_t>& keep);
  void commit_checkpoint(const disk_file_job& f, const checkpoint_meta& meta, std::uint64_t epoch,
                         const disk_file_result& result, disk_write_report& r);

  file_env& env_;
  state_layout layout_;
  const eviction_clock& clock_;
  disk_store_options options_;
  std::string folder_;
  std::size_t grid_ = 0;
  std::unique_ptr<disk_eviction> eviction_;
  std::unordered_map<std::uint64_t, chunk_entry> chunks_;   // by prefix hash
  std::unordered_map<std::uint64_t, anchor_entry> anchors_; // by anchor_id(ns, key)
  struct checkpoint_entry {
    std::uint64_t key_hash = 0;
    std::size_t rows = 0;
    std::uint64_t bytes = 0;
  };
  std::unordered_map<std::uint64_t, checkpoint_entry> checkpoints_;  // by eviction id
  std::string checkpoint_name(std::uint64_t key_hash, std::size_t rows) const;
  std::unordered_map<std::uint64_t, std::string> paths_;    // eviction id -> file path
  std::unordered_map<std::uint64_t, int> in_flight_;  // chunk hashes and anchor ids prepared, not committed
  std::uint64_t epoch_ = 0;  // clear() count
  std::uint64_t pending_bytes_ = 0;  // bytes prepared and not committed: the budget counts them
  bool warned_ = false;
  long hits_ = 0, restore_failures_ = 0, write_failures_ = 0, refusals_ = 0, evictions_ = 0,
       superseded_ = 0, files_written_ = 0;
  std::uint64_t bytes_written_ = 0, bytes_read_ = 0;
};

}  // namespace anchorage
