#pragma once
// The session spill's durable store (docs/SPILL.md): content-addressed block and anchor files
// and one manifest per conversation, through the file seam (runtime/io/file_env.hpp).
//
// Directory: <dir>/<fingerprint, 16 hex>/spill/ (the disk tier's folder; its scanner leaves
// other names alone):
//   b-<name, 16 hex>.blk   a block: rows [a, b) of every view, its token ids
//   s-<name, 16 hex>.sec   an anchor: every section at one position
//   m-<id, 16 hex>.man     a conversation's manifest (protocol/spill_format.hpp)
//
// Integrity (invariants 2, 3, 5): every file goes through file_env::write_atomic (tmp, fsync,
// rename, directory fsync); a spill's manifest is written last, after every new block and
// anchor it names was renamed, so a crash at any point leaves the previous manifest of the
// conversation and the files it names. Every file has a crc32 per section; a read verifies the
// manifest's crc, each file's header (magic, version, fingerprint, grid, layout), its place
// (a, b or at), its token ids against the manifest's, every crc, and the block sums recomputed
// against the manifest's, before it returns a byte. A file that fails is deleted with the
// manifests that name it. No I/O failure throws; a failed write is a soft failure (counted,
// warned once through the log seam) and the previous spill stays.
//
// Content addressing: a block or anchor whose name is indexed (or in flight in a prepared
// write) is not written again; files are reference-counted by the manifests that name them and
// deleted when none does. The budget counts every file; room is made before a write by
// evicting the least recently used manifests (never one a prepared write names or the one the
// write replaces), and a file shared by several conversations stays while one of them names it.
//
// Not thread-safe: one owner (the board). The spill writer actor runs execute_spill_write on
// its own env between prepare() and commit().
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "protocol/spill_messages.hpp"
#include "protocol/spill_stats.hpp"
#include "runtime/core/status.hpp"
#include "runtime/engine/state_layout.hpp"
#include "runtime/io/file_env.hpp"
#include "runtime/spill/spill_image.hpp"
#include "runtime/spill/spill_index.hpp"

namespace anchorage {

struct spill_store_options {
  std::string dir;                 // --cache-dir: the store works in dir/<fingerprint hex>/spill
  std::uint64_t budget_bytes = 0;  // --session-spill-gb
};

struct spill_scan_report {
  std::size_t manifests = 0;  // indexed
  std::size_t blocks = 0, anchors = 0;
  std::size_t tmp_reaped = 0;  // .tmp orphans removed
  std::size_t foreign = 0;     // files of another fingerprint, grid or layout removed
  std::size_t damaged = 0;     // files with a bad header or length, manifests naming a missing file
  std::size_t orphans = 0;     // blocks and anchors no manifest names, removed
};

// One file a prepared write writes.
struct spill_file_job {
  enum class kind { block, anchor, manifest } what = kind::block;
  std::size_t index = 0;  // into image.blocks / image.anchors (a staged one); unused for the manifest
  std::string name;       // file name in the folder
  std::uint64_t bytes = 0;
};

// What prepare() decided for one image.
struct spill_write_plan {
  std::uint64_t plan_id = 0;          // names the in-flight marks commit() releases
  std::string folder;                 // where execute_spill_write writes
  std::vector<spill_file_job> files;  // new blocks, new anchors, then the manifest last
  std::size_t blocks_present = 0;     // named by the manifest and already held (not written)
  std::size_t anchors_present = 0;
  std::uint64_t bytes = 0;  // what the files add
  std::size_t evicted = 0;  // manifests evicted to make room
  bool refused = false;     // over the budget even after evicting, or a named file is neither held nor staged
  std::string error;
};

// What one write did (commit()).
struct spill_write_report {
  std::size_t blocks_written = 0, blocks_present = 0;
  std::size_t anchors_written = 0, anchors_present = 0;
  std::uint64_t bytes_written = 0;
  std::size_t evicted = 0;
  bool refused = false;
  bool failed = false;  // a file failed to write: nothing of this spill is indexed, the previous stays
  std::string error;
};

// Encodes and writes the plan's files in order through `env`, stopping at the first failure
// (the results then end with it). Touches no index: the spill writer actor runs it.
std::vector<file_result> execute_spill_write(file_env& env, const state_layout& layout,
                                             const spill_image& image, const spill_write_plan& plan);

// One block file read back and verified: rows [a, b) of every view, in place in the bytes read
// (the rows go from the read buffer to the engine with no copy in between).
struct spill_read_block {
  std::size_t a = 0, b = 0;
  file_buffer bytes;
  std::vector<const unsigned char*> rows;  // per view: (b - a) rows, into `bytes`
};

// A conversation read back and verified: rows [0, manifest.tokens.size()) of every view, as its
// blocks (in order, each where it was read), and every anchor's sections, host memory.
struct spill_read {
  spill_manifest manifest;
  std::vector<spill_read_block> blocks;                          // per manifest.blocks entry
  std::vector<std::size_t> row_bytes;                            // per view: one row's bytes
  std::vector<std::vector<std::vector<unsigned char>>> anchors;  // per manifest.anchors entry, per section
  std::uint64_t bytes_read = 0;

  // Rows [0, n) of every view gathered into one vector per view (a copy: for a caller that
  // wants them whole, as the tests do).
  std::vector<std::vector<unsigned char>> rows() const;
};

// One read of a conversation, in three parts: planned by the store (plan_read: the files its
// manifest names, a copy of the manifest; no I/O), executed anywhere with an env of its own
// (execute_spill_read: the spill reader actor, so no NVMe read runs on the board's thread), and
// finished by the store (finish_read). Only its holder at the time touches it.
struct spill_fetch {
  struct file {
    std::string path;
    std::size_t bytes = 0;
    spill_file_key key;
    bool manifest = false;
  };
  // The plan.
  std::uint64_t id = 0;
  std::uint64_t epoch = 0;  // the store's at the plan: a clear in between makes the read stale
  state_layout layout;
  spill_manifest manifest;
  std::vector<unsigned char> encoded;  // the manifest's indexed bytes
  std::vector<file> files;             // the manifest, its blocks, its anchors
  // The outcome (execute_spill_read).
  spill_read read;            // every byte verified when `failure` is empty
  std::string failure;        // what failed, naming the file; empty: verified
  std::size_t failed_at = 0;  // into `files`
  double read_s = 0;          // the read's time, verification included
};

// Reads and verifies every file `f` names through `env` (see spill_store's header comment),
// filling its outcome. Touches no index; thread-safe as far as `env` is (one env per thread).
void execute_spill_read(file_env& env, spill_fetch& f);

class spill_store {
 public:
  // Does no I/O: call scan() first. `env` must outlive the store.
  spill_store(file_env& env, const state_layout& layout, spill_store_options opts);
  spill_store(const spill_store&) = delete;
  spill_store& operator=(const spill_store&) = delete;

  // Start-up: creates the folder, reaps .tmp orphans, removes files of another fingerprint,
  // grid or layout and damaged ones, reads every manifest (a manifest naming a missing or
  // wrong-sized file is removed), removes blocks and anchors no manifest names, and rebuilds
  // the index; a manifest's last use is its file's modification time.
  spill_scan_report scan();

  // ---- The catalog (no I/O) ---------------------------------------------------------------
  bool has_block(std::uint64_t name) const;   // indexed or in flight
  bool has_anchor(std::uint64_t name) const;  // indexed or in flight
  // Every indexed manifest, most recently used first.
  std::vector<const spill_manifest*> manifests() const;
  const spill_manifest* find(std::uint64_t id) const;
  // The paths of every file manifest `id` names, then its manifest's; empty when not indexed.
  std::vector<std::string> paths_of(std::uint64_t id) const;
  // The bytes a read of manifest `id` costs (every file it names); 0 when not indexed.
  std::uint64_t read_bytes(std::uint64_t id) const;

  // ---- Writes -----------------------------------------------------------------------------
  // prepare(): decides the files (a block or anchor not held must be staged in the image),
  // makes room (evictions, files deleted now), marks the new files in flight. Every prepare()
  // is committed, with the writer's results (possibly none), to release its marks.
  spill_write_plan prepare(const spill_image& image);
  // Indexes what was written: on success the manifest replaces the conversation's earlier one
  // (the files only it named are deleted); on a failure the files this write renamed and no
  // manifest names are deleted and the earlier manifest stays.
  spill_write_report commit(const spill_image& image, const spill_write_plan& plan,
                            const std::vector<file_result>& results);

  // ---- Reads ------------------------------------------------------------------------------
  // Reads and verifies every file of manifest `id` (see the header comment); counts a hit and
  // makes it the most recently used. On any failure: the failing file and the manifests naming
  // it are deleted, and the status names what failed.
  expected<spill_read> read_verified(std::uint64_t id);
  // The same in parts (spill_fetch): nullptr when `id` is not indexed. finish_read() counts the
  // hit and makes the conversation the most recently used, or (a failed read) deletes the file
  // that failed and every manifest naming it; a read of a manifest that changed or was cleared
  // since its plan is a failure and deletes nothing.
  spill_fetch_ptr plan_read(std::uint64_t id) const;
  expected<spill_read> finish_read(spill_fetch& f);

  // ---- A conversation from elsewhere ---------------------------------------------------------
  // A manifest (`encoded`, of conversation `id`) whose block and anchor files another owner put
  // in the folder (the remote level's fetch: `written`, file names): every file it names is
  // checked as the scan checks it (header, place, sums, size), room is made, the manifest is
  // written (atomically) and indexed, replacing the conversation's older one. Refused (false,
  // `why` says why) when it fails a check, is not newer than the one held, a write of the
  // conversation is prepared, or it does not fit; then the written files no manifest names are
  // removed. A read of it verifies every byte, as any other.
  bool adopt(std::uint64_t id, const std::vector<unsigned char>& encoded,
             const std::vector<std::string>& written, std::string& why);

  // ---- Maintenance --------------------------------------------------------------------------
  // Deletes one manifest (and the files only it names); false when not indexed.
  bool remove(std::uint64_t id);
  // Deletes every file of the folder and empties the index; returns the files deleted.
  std::size_t clear();

  // The files held and in flight, the counters since it opened (reads: verified reads), and the
  // conversations most recently used (an index walk: as many as it holds).
  spill_store_stats stats() const;

  std::size_t manifest_count() const;
  std::size_t block_count() const;
  std::uint64_t total_bytes() const;
  std::uint64_t max_bytes() const { return opts_.budget_bytes; }
  // An operator's new budget: set, then the least recently used conversations (never one a
  // prepared write replaces or one in flight) evicted until the files fit it, when evicting can
  // make them fit; otherwise the next write's room does. Returns the conversations evicted.
  std::size_t set_budget(std::uint64_t bytes);
  const std::string& folder() const { return folder_; }
  const state_layout& layout() const { return layout_; }

 private:
  file_env& env_;
  state_layout layout_;
  spill_store_options opts_;
  std::string folder_;
  // The implementation's index follows (helper: add what you need below this line).
  // A prepared write until its commit: what it pins (every file its manifest names, the new
  // ones included) and what it writes.
  struct plan_state {
    std::uint64_t id = 0;     // the conversation
    std::uint64_t epoch = 0;  // clear() moves the store's epoch: an older plan installs nothing
    bool unchanged = false;   // the held manifest is this one: nothing to write
    std::set<spill_file_key> pinned;
  };

  // A block or anchor file as the scan finds it.
  struct found_file {
    std::string path;
    std::uint64_t bytes = 0;
    std::uint64_t a = 0, b = 0;  // a block's place; an anchor's at in a
    bool end = false;
    std::vector<spill_sum> sums;
  };
  enum class file_check { ok, foreign, damaged };
  // Reads the header of the block (anchor) file at `path` named `name` and checks it against the
  // layout, its name and its size; `out` is filled when ok.
  file_check check_block(const std::string& path, std::uint64_t name, found_file& out) const;
  file_check check_anchor(const std::string& path, std::uint64_t name, found_file& out) const;

  std::string path_of(const spill_file_key& k) const;
  std::string manifest_path(std::uint64_t id) const;
  // Deletes dead files from disk and the index; returns how many.
  std::size_t delete_files(const std::vector<spill_file_key>& dead);
  // Drops manifest `id` from the index and disk, with the files only it named.
  void drop_manifest(std::uint64_t id);
  // Makes `id` the most recently used, in memory and in its file's mtime.
  void touch(std::uint64_t id);
  std::int64_t next_stamp();
  // Room for `need` more bytes besides `freed` (the manifest the write replaces): evictions
  // (LRU, never `keep` or a conversation in flight, never freeing a file in `named`). False
  // (nothing evicted) when even evicting every candidate would not make it.
  bool make_room(std::uint64_t need, std::uint64_t freed, std::uint64_t keep,
                 const std::set<spill_file_key>& named, std::size_t& evicted);
  // A failed spill's manifest file: the held manifest's bytes again, or no file when none.
  void restore_manifest_file(std::uint64_t id);
  void warn_once(const std::string& what);
  spill_write_plan refuse(spill_write_plan p, std::string why);

  spill_index index_;
  std::map<std::uint64_t, plan_state> plans_;  // by plan_id
  std::uint64_t next_plan_id_ = 1;
  std::uint64_t epoch_ = 0;
  std::uint64_t use_clock_ = 0;  // last_use order within the process
  std::int64_t last_stamp_ = 0;  // the newest mtime given a manifest (seconds)
  bool warned_ = false;
  // The counters since it opened; stats() fills in the files held and in flight.
  spill_store_stats counts_;
};

}  // namespace anchorage
