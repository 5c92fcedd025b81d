#pragma once
// The disk tier as its own actor sees it (actors/disk.hpp), testable without actors: the index
// (disk_store), admission, eviction, the start-up scan, the checkpoints, the read decision, the
// verified reads and the commit of written jobs. It never touches an engine: a read returns
// verified host bytes, and the engine's owner applies them (apply, apply_checkpoint), between
// its own steps. Staging (copying rows and sections out of the engine) stays with the engine's
// owner too; it hands the staged write over as a disk_submission.
//
// A write goes prepare() (room made, files decided and marked in flight) -> the disk writer's
// execute_disk_write() on its own env -> commit() (indexed, or deleted when the chain lost a
// part meanwhile; in-flight marks released; evictions). Every prepared job must be committed,
// with the results or with none (a writer that went away).
//
// Offers carry the service's generation (bumped by start() and clear()): read() of an offer of
// another generation fails cleanly, and so does one whose anchor went (an eviction, a failed
// read) or whose prompt is not the one offered for.
//
// Not thread-safe: one owner (the disk actor). `env` and `clock` must outlive it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "protocol/cache_settings.hpp"
#include "protocol/disk_messages.hpp"
#include "runtime/core/status.hpp"
#include "runtime/disk/disk_admission.hpp"
#include "runtime/disk/disk_store.hpp"
#include "runtime/disk/disk_tier_options.hpp"

namespace anchorage {

// A staged write as the engine's owner hands it over: the host copies (rows, sections, ids) and
// what they charge its staging pool, released when the job's reply comes back. A checkpoint
// write carries its meta (sections staged as write.anchors[0], rows [0, rows)).
struct disk_submission {
  staged_write write;
  std::optional<checkpoint_meta> checkpoint;
  std::uint64_t staged_bytes = 0;
};

class disk_service {
 public:
  // Does no I/O: call start() first.
  disk_service(file_env& env, const state_layout& layout, const eviction_clock& clock,
               disk_tier_options options);

  // Start-up recovery: the store's scan, then what the lifetime or a smaller budget evicts; the
  // names of other engines' chunks under the tier's root are listed (disk_offer_reply's
  // foreign_line).
  disk_scan_report start();

  // ---- Reads ----------------------------------------------------------------------------------
  // The offer for `prompt` when the disk starts later than `floor` and reading it is faster than
  // prefilling the tokens it saves at `prefill_tokens_per_s` (0: unmeasured, read). Counts a miss
  // (no anchor) or a decline (slower). Index only, no I/O. Says too how deep only another
  // engine's folder reaches, when that is deeper than the floor and the offer.
  disk_offer_reply offer(const std::vector<token_id>& prompt, std::size_t floor, double prefill_tokens_per_s);
  // Reads and verifies every file of the offer's chain and anchor against `prompt`. Fails,
  // touching nothing but the broken chain (deleted), when the offer is of another generation,
  // its anchor is gone, the prompt is not the one offered for, or any file fails a check.
  // `damaged`, when given, is set when the offer's files were found and failed their checks
  // (any other failure: the offer was stale).
  expected<verified_read> read(const disk_offer& offer, const std::vector<token_id>& prompt,
                               bool* damaged = nullptr);
  // Writes a verified read into `into`: rows [0, line), every section, valid length = line.
  static void apply(const verified_read& read, state_adapter& into);

  // The longest checkpoint of `key_hash`, read and verified against `prompt` (the request's);
  // fails when there is none or it fails a check (it is then deleted).
  expected<verified_checkpoint> read_checkpoint(std::uint64_t key_hash, const std::vector<token_id>& prompt);
  static void apply_checkpoint(const verified_checkpoint& read, state_adapter& into);

  // A request's start (disk_read_request): the checkpoint first when asked and present, then
  // the prefix offer; verified buffers, or kind none with what failed.
  disk_read_reply start_read(const disk_read_request& req);

  // ---- Writes ---------------------------------------------------------------------------------
  // Admission for a request's prefill (disk_admission::plan): an inexact start writes nothing;
  // a session's first request (n >= min_tokens) gets its first-request anchors.
  disk_write_lines plan_writes(const disk_plan_request& req);
  // Plans a submission (disk_store::prepare / prepare_checkpoint). nullptr when there is nothing
  // to write (refused, or every file present): `reply` then says so and the staging is released.
  std::shared_ptr<disk_job> prepare(disk_submission&& s, disk_write_reply& reply);
  // Indexes what the writer wrote (job.results; none when the writer went away), releases the
  // in-flight marks, drops a checkpoint whose generation ended meanwhile, evicts to the cap.
  disk_write_reply commit(const disk_job& job);

  void generation_finished(std::uint64_t key_hash);
  void generation_started(std::uint64_t key_hash);

  // ---- Maintenance ----------------------------------------------------------------------------
  // Deletes every file, forgets the counts and starts a new generation; jobs out are indexed
  // nowhere when they come back.
  disk_clear_reply clear();
  // An operator's new budget, lifetime and free-space floor (each given one replaces the
  // option; the rest stay): applied at once, and what they no longer allow evicted by the
  // value rule. Returns the files deleted.
  std::size_t set_limits(const cache_settings& s);
  // The operator's list of anchors (disk_store::list_entries).
  disk_entry_list list_entries(std::size_t limit) const { return store_.list_entries(limit); }
  disk_stats stats() const;

  std::uint64_t generation() const { return generation_; }
  disk_store& store() { return store_; }
  const disk_store& store() const { return store_; }
  const disk_tier_options& options() const { return options_; }

 private:
  // The deepest grid line above `above` whose prefix only another engine's folder holds; 0: none.
  std::size_t foreign_line(const std::vector<token_id>& prompt, std::size_t above) const;

  file_env& env_;
  const state_layout layout_;
  disk_tier_options options_;
  disk_store store_;
  disk_admission admission_;
  std::size_t grid_;
  std::uint64_t generation_ = 0;
  std::unordered_set<std::string> sessions_seen_;
  std::unordered_set<std::uint64_t> finished_keys_;
  std::unordered_set<std::uint64_t> foreign_chunks_;  // other engines' chunk names, from start()
  disk_scan_report sweep_;                            // start()'s
  double read_bps_ = 0;
  long misses_ = 0, declined_ = 0, refused_reads_ = 0, jobs_ = 0, anchors_planned_ = 0;
  long long tokens_saved_ = 0;
  std::size_t writes_out_ = 0;
};

}  // namespace anchorage
