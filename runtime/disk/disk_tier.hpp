#pragma once
// The disk tier as the device tiers use it (seed §13.7, issue 6 items 3 to 5): when to read
// (it starts later than the tiers above and its read costs less than the prefill it saves),
// what to write (admission, decided before the prefill), and the write-behind staging (sections
// copied as the prefill passes an anchor's line, rows once the prefill is past the last line).
//
// Writes leave as jobs: take_jobs() hands each staged write, already planned by the store
// (room made, files decided), to whoever writes it: the disk writer actor, which runs
// execute_disk_write() on its own env while the board serves, or run_jobs() here (tests, tools).
// written() then indexes what reached the disk. A request never waits for a write.
//
// Not thread-safe: the board owns it (through cache_tiers).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/disk/disk_admission.hpp"
#include "runtime/disk/disk_store.hpp"
#include "runtime/core/token.hpp"
#include "runtime/engine/state_adapter.hpp"

namespace anchorage {

struct disk_tier_options {
  disk_store_options store;                // folder, budget, lifetime, floor, entry cap
  disk_admission_options admission;        // --disk-min-tokens, counting capacity
  std::uint64_t stage_bytes = 1ULL << 30;  // host bytes staged and not yet written, at most
  double assumed_read_bytes_per_s = 1e9;   // the read bandwidth until one is measured
  std::size_t checkpoint_tokens = 0;       // --generation-checkpoint-tokens: 0 off
};

// One staged write on its way to the disk and back.
struct disk_job {
  staged_write write;
  disk_write_plan plan;
  std::vector<disk_file_result> results;  // filled by the writer
  std::uint64_t staged_bytes = 0;         // charged to the staging pool until written()
};

// The disk's offer for a prompt: the anchor it found and what reading it costs. The tier knows
// nothing of guests or served prompts; its coordinator (cache_tiers) decides whether to take it.
struct disk_tier_offer {
  std::size_t line = 0;          // the prefix length a restore covers (a multiple of the grid)
  std::uint64_t read_bytes = 0;  // what the restore reads: the chunks and the anchor
  disk_hit hit;                  // the store's find, as restore() hands it back to the store
};

// What the tier needs of a request when its prefill begins.
struct disk_request {
  std::vector<token_id> served;  // the prompt the prefill runs
  std::size_t at = 0;            // where the prefill starts (the restored state's end)
  bool exact = true;             // the state at `at` is a cold grid prefill's
  std::string session_key;
  std::optional<std::size_t> user_start;  // where the last user message starts, when known
};

class disk_tier {
 public:
  // `env` (the board's: reads, removals, the scan) and `clock` must outlive the tier.
  disk_tier(file_env& env, const state_layout& layout, const eviction_clock& clock,
            disk_tier_options options);

  // Startup recovery: the store's scan.
  disk_scan_report start();

  // The disk's offer for `prompt` when it starts later than `floor` (where the tiers above
  // resume) and reading it is faster than prefilling the tokens it saves (a restore of it is a
  // cold prefill's state, rows included). nullopt otherwise (counted as a miss when no anchor
  // was found).
  std::optional<disk_tier_offer> offer(const std::vector<token_id>& prompt, std::size_t floor);
  // Reads and verifies the offer's files (for `prompt`, the one offer() saw) and writes them
  // into `into`. False, with `error` naming what failed, when anything failed: `into`
  // untouched, the broken chain deleted.
  bool restore(const disk_tier_offer& o, const std::vector<token_id>& prompt, state_adapter& into,
               std::string& error);

  // The request's prefill begins: plans what it will write (admission) and starts its
  // staging. Lines above the taint (an inexact start) are never written.
  void begin(const disk_request& req);
  // After each prefill chunk: sections staged at an anchor's line; once the prefill passed the
  // plan's last line, the rows are staged and the job leaves (take_jobs).
  void after_prefill_step(const state_adapter& state);
  // The request is over: a prefill cut short (a cancel) still writes the lines it passed.
  void finish(const state_adapter& state);

  // Generation checkpoints (seed 003): the whole state of a decoding request, staged now
  // (sections and rows [0, rows)) and written behind like any job. `meta.tokens` = prompt +
  // output ids (the last pending), so rows = meta.tokens.size() - 1 must be the state's length.
  // False when refused (staging budget, cap).
  bool stage_checkpoint(const state_adapter& state, const checkpoint_meta& meta);
  // The generation of `key_hash` ended: its checkpoints go, now and when one still in flight
  // comes back.
  void generation_finished(std::uint64_t key_hash);
  // A request with this key started again (a resume): its checkpoints are wanted again.
  void generation_started(std::uint64_t key_hash);

  // The jobs staged since the last call, planned and ready to write.
  std::vector<std::shared_ptr<disk_job>> take_jobs();
  // A writer wrote job's files (results filled): index them, release the staging, evict what
  // the lifetime or the budget says.
  void written(const disk_job& job);
  // Writes every pending job through the tier's own env, now (no writer actor).
  void run_jobs();

  // Deletes every file and forgets the counts; jobs in flight are indexed nowhere when they
  // come back (their files are deleted).
  std::size_t clear();

  nlohmann::json stats() const;

  disk_store& store() { return store_; }
  const disk_store& store() const { return store_; }
  const disk_admission& admission() const { return admission_; }
  const disk_tier_options& options() const { return options_; }
  std::uint64_t staged_bytes() const { return staged_bytes_; }
  // The measured rates (0 until measured).
  double read_bytes_per_s() const { return read_bps_; }
  double prefill_tokens_per_s() const { return prefill_tps_; }
  // The plan of the running request (empty when it writes nothing).
  const admission_plan& running_plan() const { return plan_; }

 private:
  void stage_rows_and_queue(const state_adapter& state, std::size_t top);
  void drop_staging();

  file_env& env_;
  const state_layout layout_;
  disk_tier_options options_;
  disk_store store_;
  disk_admission admission_;
  std::size_t grid_;

  // The running request.
  admission_plan plan_;
  std::unique_ptr<disk_job> staging_;
  std::size_t passed_ = 0;  // the highest line this prefill passed
  std::int64_t last_step_ns_ = 0;
  std::size_t last_step_len_ = 0;

  std::vector<std::shared_ptr<disk_job>> ready_;
  std::uint64_t staged_bytes_ = 0;
  std::unordered_set<std::string> sessions_seen_;
  std::unordered_set<std::uint64_t> finished_keys_;
  long checkpoints_staged_ = 0;
  double read_bps_ = 0, prefill_tps_ = 0;
  long hits_ = 0, misses_ = 0, declined_ = 0, restore_failures_ = 0, stage_refusals_ = 0, jobs_ = 0,
       anchors_planned_ = 0;
  long long tokens_saved_ = 0;
};

}  // namespace anchorage
