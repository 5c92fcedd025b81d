#pragma once
// The session spill as the board holds it (docs/SPILL.md): the durable store (its catalog, its
// budget, its reads) and what the board does with it, without actors:
//   - stage: a conversation in a slot (the resident one, or the parked one) becomes a
//     spill_image, its blocks named by sums computed where the rows live; only the blocks and
//     anchors the store does not hold are copied to host memory. Then prepare() decides the
//     files, and the job goes to the spill writer actor; its results come back to committed().
//   - offer: the spilled conversation that serves a prompt best (its end anchor after the end
//     alignment, or its newest usable grid anchor), when reading it costs less than the prefill
//     it saves.
//   - read back: a conversation read and verified, its rows written into a slot's engine, made
//     the slot's resident prompt.
// Shared by every slot of a board (slot_board); not thread-safe: one owner (the board actor).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/disk_messages.hpp"
#include "protocol/spill_messages.hpp"
#include "runtime/cache/resident_prefix.hpp"
#include "runtime/cache/resume_offer.hpp"
#include "runtime/io/file_env.hpp"
#include "runtime/spill/spill_store.hpp"
#include "runtime/tiers/spill_options.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

// One spill on its way to the writer and back. Only its holder at the time touches it.
struct spill_job {
  spill_image image;
  spill_write_plan plan;
  std::vector<file_result> results;  // the writer's, one per file written (shorter: it stopped)
  std::string why;                   // "drain" or "evict"
  std::int64_t staged_ns = 0;        // when the board staged it
  double write_s = 0;                // the writer's time
};

// What offer() found: the manifest and the resume it gives.
struct spill_offer {
  std::uint64_t id = 0;
  resume_offer offer;  // source spill, via none
  std::uint64_t read_bytes = 0;
  double read_s = 0;
};

class spill_keeper {
 public:
  // `env` is the board's own (reads, the scan's deletes); the writer has another.
  spill_keeper(std::unique_ptr<file_env> env, const state_layout& layout, spill_options opts,
               tokenizer tok = tokenizer());

  spill_scan_report scan() { return store_.scan(); }

  // ---- Staging ------------------------------------------------------------------------------
  // The conversation in place in `state` (the slot's resident prompt, rows [0, tokens) of
  // `state`), with its newest 4 grid anchors and its end anchor; nullptr when there is nothing
  // to spill (no rows), when the host staging cannot hold it, or when the store refused it.
  // The job's plan is prepared: send it to the writer, then committed(), always.
  spill_job_ptr stage_resident(const resident_prefix& r, const state_adapter& state, kernels::backend where,
                               const std::string& session, int slot, bool resident, const std::string& why);
  // The parked session of that slot (rows [0, from) in place, [from, end) in its copy).
  spill_job_ptr stage_parked(const resident_prefix& r, const state_adapter& state, kernels::backend where,
                             const std::string& session, int slot, const std::string& why);
  // The writer's answer: the store indexes what was written; the staged bytes are released.
  spill_write_report committed(spill_job& job);

  // ---- Lookups ------------------------------------------------------------------------------
  // The spilled conversation that starts `prompt` later than `floor` (resident_prefix's rules:
  // its end anchor after the end alignment, else its largest grid anchor at or below the
  // tokens it shares, at or below its taint, leaving one token to forward), when its read
  // costs less than prefilling from `floor` at `prefill_tokens_per_s` (unmeasured: it reads).
  // `declined_at`, when given, rises to the deepest start declined because reading it costs more
  // than the prefill it saves.
  std::optional<spill_offer> offer(const std::vector<token_id>& prompt, std::size_t floor,
                                   double prefill_tokens_per_s, bool end_anchor, bool end_align,
                                   std::size_t* declined_at = nullptr) const;

  // Reads manifest `id` back and verifies it: nothing reaches an engine before that (a failure
  // is counted and the status says why).
  expected<spill_read> read(std::uint64_t id);
  // The same read in parts, so that its I/O runs off the board's thread: planned here (nullptr:
  // not indexed), executed by the spill reader (execute_spill_read), finished here (counted; a
  // failure deletes what failed, as read() does).
  spill_fetch_ptr plan_fetch(std::uint64_t id) const { return store_.plan_read(id); }
  expected<spill_read> fetched(spill_fetch& f);
  // Executes a planned read on the owner's thread, through the keeper's own env: for a board
  // without a spill reader (tests without actors).
  void execute_here(spill_fetch& f) { execute_spill_read(*env_, f); }
  // Writes a verified read's rows into `into` and makes it `r`'s resident prompt (valid length:
  // its rows; the caller restores the sections from r's anchors). Throws only what an
  // allocation throws, before the first row is written.
  void apply(const spill_read& read, state_adapter& into, kernels::backend where, resident_prefix& r);

  // A conversation the remote level fetched into the folder (spill_store::adopt; a refusal is
  // logged and removes what the fetch wrote). True when it is now indexed.
  bool adopt(const fetched_spill& f);

  // ---- In flight -----------------------------------------------------------------------------
  // A staged job is in flight from stage_*() until committed(): its conversation is in no
  // manifest yet, and its bytes are on their way to the NVMe. A request that would resume from
  // it waits for the commit (slot_board) instead of being served cold.
  // The longest prefix `prompt` shares with a conversation in flight (0: none).
  std::size_t in_flight_share(const std::vector<token_id>& prompt) const;
  // Whether a conversation of session `session` (not empty) is in flight.
  bool in_flight_session(const std::string& session) const;
  std::size_t in_flight() const;
  // A request held for a commit (stats: in_flight_waits).
  void count_wait() { ++counts_.in_flight_waits; }

  // Manifests a planned stop left as some slot's resident conversation, newest first.
  std::vector<const spill_manifest*> resident_manifests() const;

  // ---- Maintenance ----------------------------------------------------------------------------
  std::size_t clear();
  // An operator's new budget (spill_store::set_budget); returns the conversations evicted.
  std::size_t set_budget(std::uint64_t bytes) {
    opts_.budget_bytes = bytes;
    return store_.set_budget(bytes);
  }
  spill_tier_stats stats() const;
  std::uint64_t staged_bytes() const { return staged_; }
  std::size_t min_tokens() const { return opts_.min_tokens; }
  spill_store& store() { return store_; }
  const spill_store& store() const { return store_; }
  const state_layout& layout() const { return layout_; }
  double read_rate() const { return read_bps_ > 0 ? read_bps_ : opts_.read_bytes_per_s; }
  long hits() const { return counts_.hits; }
  void count_hit(std::size_t tokens_saved) {
    ++counts_.hits;
    counts_.tokens_saved += tokens_saved;
  }

 private:
  struct conversation;
  spill_job_ptr stage(const conversation& c, const std::string& why);

  std::unique_ptr<file_env> env_;
  state_layout layout_;
  spill_options opts_;
  tokenizer tok_;
  spill_store store_;
  std::uint64_t staged_ = 0;                               // host bytes in jobs not committed yet
  std::vector<std::weak_ptr<const spill_job>> in_flight_;  // staged, not committed yet
  double read_bps_ = 0, write_bps_ = 0;
  // The counters and the last transfers; stats() fills in the rest.
  spill_tier_stats counts_;
};

}  // namespace anchorage
