#pragma once
// The durable prefix store (the SsdCacheStore contract) over the chunk and
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
// failure (warned once through the log seam, counted) and serving goes on.
//
// The index is in memory, rebuilt by scan() from headers alone: .tmp orphans reaped, files of
// another fingerprint or grid, with a bad header, of the wrong length or whose chain parent is
// missing deleted. Other names are left alone. Lookups (find, find_exact, has_durable_prefix,
// longest_durable_prefix_tokens) are pure index work, no I/O: the hashes name the files, the read's token
// check catches a 64-bit collision.
//
// Budget: disk_eviction (runtime/disk/disk_eviction.hpp) over every file, an anchor's parent being
// the chunk at its line and a chunk's the chunk below it. Room is made before a write (the
// bytes are known before anything is encoded); an entry larger than the entry cap is refused.
//
// The store is a façade over five parts, each testable on its own:
//   disk_names          the files' names and paths, namespace validation (no I/O)
//   disk_index          what is on disk, lookups, eviction bookkeeping (no I/O)
//   disk_write_planner  what a staged write needs: files, bytes, evictions for room (no I/O)
//   disk_reader         a hit's files read with submission ahead and verified
//   disk_scanner        start-up recovery: reap, sweep, remove damage, rebuild the index
// and execute_disk_write, which encodes and writes a plan's files.
//
// Not thread-safe: one owner. In the server the board owns the store; the disk writer actor
// runs the writes (see actors/disk_writer.hpp) on its own env and reports what it wrote.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/disk_types.hpp"
#include "runtime/core/status.hpp"
#include "runtime/core/token.hpp"
#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_eviction.hpp"
#include "runtime/disk/disk_index.hpp"
#include "runtime/disk/disk_names.hpp"
#include "runtime/disk/disk_reader.hpp"
#include "runtime/disk/disk_scanner.hpp"
#include "runtime/disk/disk_write_planner.hpp"
#include "runtime/disk/staged_state.hpp"
#include "runtime/engine/state_adapter.hpp"
#include "runtime/io/file_env.hpp"

namespace anchorage {

struct disk_store_options {
  std::string dir;                    // the tier's root; the store works in dir/<fingerprint hex>
  disk_eviction_options eviction;     // budget (--disk-cache-gb), lifetime, free-space floor
  std::uint64_t entry_max_bytes = 0;  // one write's largest size; 0: the budget
};

// What one write did.
struct disk_write_report {
  std::size_t chunks_written = 0;
  std::size_t chunks_present = 0;  // already indexed (or being written), not written again
  std::size_t anchors_written = 0;
  std::size_t superseded = 0;
  std::uint64_t bytes_written = 0;
  bool refused = false;  // over the entry cap or no room: nothing written
  bool failed = false;   // a file failed to write (the rest of the write was dropped)
  std::string error;     // what failed, when refused or failed
};

// One file's outcome in execute_disk_write: the bytes written, or why it failed.
using disk_file_result = expected<std::uint64_t>;

// What a restore read.
struct disk_restore {
  std::uint64_t bytes_read = 0;
};

// A prefix restore read and verified, not applied yet (disk_store::read_verified): every chunk
// file of the chain and the anchor file, every crc and token id checked. Move-only.
struct verified_read {
  std::size_t line = 0;  // the length it restores
  std::uint64_t bytes_read = 0;
  verified_anchor anchor;
};

// A generation checkpoint read and verified, not applied yet (disk_store::read_checkpoint_verified).
struct verified_checkpoint {
  checkpoint_read read;  // read.meta: the ids, the seed
  std::uint64_t bytes_read = 0;
};

// Encodes and writes the plan's files in order through `env`, stopping at the first failure
// (the results then end with it). File i is in flight on the env's ring while file i + 1 is
// encoded (its crcs computed). Touches no index: what the disk writer actor runs, on its own
// env, while the board serves.
std::vector<disk_file_result> execute_disk_write(file_env& env, const state_layout& layout,
                                                 const staged_write& w, const disk_write_plan& plan);

class disk_store {
 public:
  // Does no I/O: call scan() before anything else. `env` and `clock` must outlive the store.
  disk_store(file_env& env, const state_layout& layout, const eviction_clock& clock,
             disk_store_options options);
  disk_store(const disk_store&) = delete;
  disk_store& operator=(const disk_store&) = delete;

  // Startup recovery (disk_scanner): creates our folder, reaps .tmp orphans,
  // sweeps files of another fingerprint or grid and damaged ones (inside our folder only), and
  // rebuilds the index from headers alone, last use = the file's modification time. Drops every
  // earlier index entry.
  disk_scan_report scan();

  // Indexes chunk files and an anchor of `ns` that arrived in our folder from elsewhere (the
  // shared tier's fetch), checked as scan() checks a file; one that fails is deleted. Then
  // evicts to the budget. Returns the files indexed.
  std::size_t adopt(const std::vector<std::string>& chunk_paths, const std::string& ns,
                    const std::string& anchor_path);

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

  // store() of the SsdCacheStore contract: persists the state `from` holds (sections at line =
  // from.valid_length(), which must be a positive multiple of the grid, rows [0, line)) as an
  // anchor of `ns` for tokens[0, line), its missing chunks included, superseding the
  // namespace's anchors whose tokens are a prefix of it. False when refused or failed.
  bool store(const std::vector<token_id>& tokens, const state_adapter& from, const std::string& ns = "");

  // ---- Lookups (index only, no I/O) ----------------------------------------------------------
  // The longest usable anchor of `ns` for `prompt`: line <= prompt.size() - 1 (at least one
  // token forwards), its key equal to the prompt's prefix hash at that line, every chunk below
  // it indexed. Longer anchors would need their sections trimmed, which sections cannot be:
  // skipped. nullopt when none.
  std::optional<disk_hit> find(const std::vector<token_id>& prompt, const std::string& ns = "") const {
    return index_.find(prompt, ns);
  }
  // The anchor of `ns` at exactly tokens.size() (on the grid), with its chain; nullopt when none.
  std::optional<disk_hit> find_exact(const std::vector<token_id>& tokens, const std::string& ns = "") const {
    return index_.find_exact(tokens, ns);
  }
  // True when the index can seed every token of `tokens`: find_exact finds it.
  bool has_durable_prefix(const std::vector<token_id>& tokens, const std::string& ns = "") const {
    return find_exact(tokens, ns).has_value();
  }
  // The longest line of any usable anchor, any namespace; 0 when none.
  std::size_t longest_durable_prefix_tokens() const { return index_.longest_durable_prefix_tokens(); }
  // The token ids of every usable anchor, read from the chunk files' headers and token blocks
  // (no rows, no sections), shortest first. A file that cannot be read is skipped.
  std::vector<std::vector<token_id>> token_prefixes();

  // ---- Restore -------------------------------------------------------------------------------
  // Reads hit's chunks and anchor (disk_reader), verifies every one against `prompt` (which
  // holds at least hit.line ids) and the layout, and only then writes rows [0, line) and every
  // section into `into` and sets its valid length to hit.line. Counts a hit (eviction: hits + 1,
  // last use now). On any failure: the failing file and everything above it in its chain are
  // deleted, `into` is untouched, and the status names what failed.
  expected<disk_restore> restore(const disk_hit& hit, const std::vector<token_id>& prompt,
                                 state_adapter& into);
  // restore() in two steps, so the reading and checking can happen off the engine's owner:
  // read_verified() reads and verifies every file as restore() does and counts the hit (or, on
  // failure, deletes the broken chain and names what failed) without touching any engine;
  // apply_verified() then writes the bytes into `into` (rows [0, line), every section, valid
  // length = line). It touches no store, so whoever owns the engine calls it. `damaged` (when not
  // null) is set when a file failed its checks or its read, left as it is otherwise (nothing on
  // disk at that line, or a file deleted under the index: gone, as an eviction leaves it).
  expected<verified_read> read_verified(const disk_hit& hit, const std::vector<token_id>& prompt,
                                        bool* damaged = nullptr);
  static void apply_verified(const verified_read& read, state_adapter& into) { read.anchor.apply(into); }

  // ---- Generation checkpoints (storeGenerationCheckpoint) ---------------------------
  // A checkpoint is one self-contained file (runtime/disk/checkpoint_codec.hpp) in its own namespace:
  // it never seeds a prefill. A newer checkpoint of the same key supersedes the older ones only
  // once its rename succeeded, so a crash during its write leaves the previous one.
  using checkpoint_hit = disk_checkpoint_hit;
  // prepare()/commit() for a checkpoint staged in w (rows [0, rows), sections as anchors[0]).
  disk_write_plan prepare_checkpoint(const staged_write& w, const checkpoint_meta& meta);
  // The longest checkpoint of `key_hash`; nullopt when none. Index only.
  std::optional<checkpoint_hit> find_checkpoint(std::uint64_t key_hash) const {
    return index_.find_checkpoint(key_hash);
  }
  // Reads and verifies it against `prompt` and the key, then writes the whole state into `into`
  // and returns the checkpoint's meta. On failure the file is deleted and `into` untouched.
  expected<checkpoint_meta> restore_checkpoint(const checkpoint_hit& hit, const std::vector<token_id>& prompt,
                                               state_adapter& into);
  // restore_checkpoint() in two steps, as read_verified() / apply_verified().
  expected<verified_checkpoint> read_checkpoint_verified(const checkpoint_hit& hit,
                                                         const std::vector<token_id>& prompt);
  static void apply_checkpoint_verified(const verified_checkpoint& read, state_adapter& into);
  // Deletes every checkpoint of the key (the generation finished).
  std::size_t remove_checkpoints(std::uint64_t key_hash);

  // ---- Maintenance ---------------------------------------------------------------------------
  // Deletes what the eviction policy names (lifetime, budget, free-space floor); returns the
  // number of files deleted.
  std::size_t evict_to_cap();
  // Deletes every file of our folder (chunks, anchors, checkpoints) and empties the index.
  std::size_t clear();
  // New budget, lifetime and free-space floor (an operator's live setting, issue 26), then
  // evict_to_cap() at once by the value rule; returns the files deleted. Writes in flight keep
  // the room they were planned with; their commit evicts to the new cap.
  std::size_t set_eviction(const disk_eviction_options& o);

  // The anchors, most valuable first (eviction takes the last first), at most `limit`, with the
  // value, hits and age the eviction rule sees now. Index only.
  disk_entry_list list_entries(std::size_t limit) const;

  // Per-store counters and sizes for /v1/cache/stats: the store's share of disk_stats (the
  // service fills in its own counters). No I/O and no walk: cheap enough to publish after every
  // change (the file system's free bytes are one statvfs).
  disk_stats stats() const;
  // Reads refused by their checks (a crc, a token id, a size), each counted once.
  long restore_failures() const { return counts_.restore_failure_reasons.total(); }

  std::size_t entries() const { return index_.entries(); }  // anchors indexed, every namespace
  std::size_t chunk_count() const { return index_.chunk_count(); }
  bool has_chunk(std::uint64_t prefix_hash) const { return index_.has_chunk(prefix_hash); }
  std::uint64_t total_bytes() const { return index_.held_bytes(); }
  std::uint64_t max_bytes() const { return options_.eviction.budget_bytes; }
  const std::string& folder() const { return names_.folder(); }
  const disk_names& names() const { return names_; }
  // The bytes a staged write would add: its chunks and anchors not indexed yet.
  std::uint64_t bytes_needed(const staged_write& w) const { return planner_.bytes_needed(w); }
  const state_layout& layout() const { return layout_; }
  file_env& env() { return env_; }
  const disk_index& index() const { return index_; }

 private:
  // Deletes an id and everything standing on it, files and index entries; returns files deleted.
  std::size_t drop(std::uint64_t id);
  void warn_once(const std::string& what);
  // Deletes the plan's evictions, then confirms its room (or refuses it); counts refusals.
  void make_room(disk_write_plan& p);
  void commit_checkpoint(const disk_file_job& f, const checkpoint_meta& meta, std::uint64_t epoch,
                         const disk_file_result& result, disk_write_report& r);
  // A failed write's file: removed unless it is the indexed one.
  void discard_failed(std::uint64_t id, const std::string& path, const disk_file_result& result,
                      disk_write_report& r);

  file_env& env_;
  state_layout layout_;
  const eviction_clock& clock_;
  disk_store_options options_;
  std::size_t grid_ = 0;
  disk_names names_;
  disk_index index_;
  disk_write_planner planner_;
  disk_reader reader_;
  disk_scanner scanner_;
  bool warned_ = false;
  // The store's counters (hits, restore_failure_reasons, write_failures, refusals, evictions,
  // superseded, files_written, bytes_written, bytes_read); stats() fills in the rest.
  disk_stats counts_;
};

}  // namespace anchorage
