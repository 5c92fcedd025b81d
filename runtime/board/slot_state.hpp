#pragma once
// What one slot owns and its runs share (runtime/board/run.hpp): the engine, the tiers over its
// rows, the disk tier's staging, the stores it shares with the other slots, and what the slot
// remembers between requests (whose conversation holds the end anchor, the counters). Nothing
// request-specific: that is the run's. Not thread-safe: one owner (the board actor).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/board_job.hpp"
#include "protocol/cache_source.hpp"
#include "protocol/compaction_messages.hpp"
#include "protocol/disk_messages.hpp"
#include "protocol/spill_messages.hpp"
#include "protocol/vision_messages.hpp"
#include "runtime/board/compaction_prewrites.hpp"
#include "runtime/board/image_media.hpp"
#include "runtime/cache/response_cache.hpp"
#include "runtime/core/log.hpp"
#include "runtime/disk/disk_staging.hpp"
#include "runtime/disk/disk_tier_options.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/generation/generation_session.hpp"
#include "runtime/speculative/lookup_source.hpp"
#include "runtime/speculative/speculative_options.hpp"
#include "runtime/tiers/cache_tiers.hpp"

namespace anchorage {

// What one call of a slot asks its owner to send: the disk's messages (`disk_offer` and
// `disk_read` at high priority, their replies to offered() and restored(); `disk_plan`, its
// reply to planned(); each submission, its
// reply's released bytes to disk_released(); the generations started and finished), `events`
// to `sink` (the request's), `done` to the conductor, the tiers' stats when `tiers_changed`,
// and one more step() when `step_again`.
struct board_events {
  sink_actor sink;
  std::vector<stream_event> events;
  std::optional<ledger_entry> done;
  std::optional<disk_offer_request> disk_offer;
  std::optional<disk_read_request> disk_read;
  std::optional<disk_plan_request> disk_plan;
  std::vector<disk_submission_ptr> disk_submissions;
  std::vector<std::uint64_t> generations_started, generations_finished;
  // Spills staged (an eviction): each goes to the spill writer, its reply to spill_written().
  std::vector<spill_job_ptr> spill_writes;
  // A spilled conversation to read and verify (the spill tier's planned offer): to the spill
  // reader, its reply to spill_fetched() (the run waits in the restoring phase).
  spill_fetch_ptr spill_read;
  // Images to encode before the prefill (the vision cache does not hold them): to the vision
  // encoder, its reply to encoded() (the run waits in the restoring phase).
  vision_encode_ptr vision_encode;
  // A request ended: the ids the engine read and wrote for it (its prompt, then its output), for
  // the persistent suffix store's writer (docs/SUFFIX_STORE.md). Not set for idle work, a
  // replayed answer or a request that failed before its prompt was forwarded.
  std::shared_ptr<const std::vector<token_id>> suffix_add;
  // Idle work ended (finished or preempted): the compaction worker's answer.
  std::optional<idle_reply> idle;
  bool tiers_changed = false;
  bool step_again = false;
};

// A slot's counters over every run it ran.
struct slot_counters {
  long steps = 0;
  // Compaction requests served as continuations, from a prewritten summary, and as sent.
  long compactions_continued = 0, compactions_prewritten = 0, compactions_as_sent = 0;
  // The compaction worker's idle runs.
  long idle_started = 0, idle_preempted = 0, idle_finished = 0;
  speculative_counters speculation;  // of the runs that ended
};

struct board_runner_options {
  int decode_block = 4;  // tokens per step of a decode
  cache_options cache;   // the device tiers
  // The disk tier (--cache-dir), an actor of its own: its options (the staging pool, the
  // checkpoint interval). Off without options or with the cache off.
  std::optional<disk_tier_options> disk;
  // The device tiers' budget when several slots share it (slot_board); null: the runner's own.
  std::shared_ptr<memory_budget> budget;
  // What the slots held, that their miss reasons are judged against; null: each slot's own.
  std::shared_ptr<held_record> held;
  // The session spill (--session-spill), one for every slot; null: none. `slot`: this
  // runner's slot, which its spills name.
  std::shared_ptr<spill_keeper> spill;
  int slot = 0;
  // The compaction worker's summaries (one for every slot); null: none are kept or used.
  std::shared_ptr<compaction_prewrites> prewrites;
  // The response cache (one for every slot, slot_board); null: the runner makes its own when
  // cache.response_cache_bytes > 0 and the cache is on, else there is none.
  std::shared_ptr<response_cache> responses;
  // Speculative decoding (--speculative, --draft-max; docs/SPECULATIVE.md), and the persistent
  // suffix store's read side for the lookup drafter (one for every slot, owned by the board
  // actor, which installs the writer's snapshots in it); null: the lookup drafter reads the
  // request's own tokens only.
  speculative_options speculative;
  std::shared_ptr<lookup_source> lookup;
  // The model's vision tower and its cache (one for every slot); null: no images reach the
  // engine (image_media.hpp).
  std::shared_ptr<vision_tower> vision;
};

struct slot_state {
  // The slot over `eng` with `opts`' tiers and stores (the response cache its own when none is
  // shared and --response-cache-mb is set; the spill's eviction hook installed).
  slot_state(std::shared_ptr<engine> eng, const board_runner_options& opts);
  slot_state(const slot_state&) = delete;
  slot_state& operator=(const slot_state&) = delete;

  std::shared_ptr<engine> eng;
  // Held whole (the slot, the decode block, speculation and its lookup source, the summaries);
  // what the slot makes of them follows.
  const board_runner_options opts;
  std::unique_ptr<cache_tiers> tiers;
  std::unique_ptr<disk_staging> staging;      // with a disk tier (opts.disk, the cache on)
  std::shared_ptr<spill_keeper> spill;        // opts.spill with the cache on; null: no session spill
  std::shared_ptr<response_cache> responses;  // opts.responses, or the slot's own
  std::vector<spill_job_ptr> pending_spills;  // staged by the eviction hook, not handed out yet
  // The session whose conversation holds the end anchor (its last request that was no guest),
  // whether it is opencode's, and whether the resident rows were read back from the spill at
  // the start and not used since.
  std::string end_session;
  bool end_opencode = false;
  bool read_back = false;
  slot_counters counters;

  // Output tokens between generation checkpoints (--generation-checkpoint-tokens; 0: none).
  std::size_t checkpoint_every() const { return staging ? opts.disk->checkpoint_tokens : 0; }
  // The rows one conversation may use.
  std::size_t capacity() const {
    return eng->layout().views.empty() ? 0 : eng->layout().views.front().capacity;
  }
  // A tier call that throws (an allocation that failed mid-copy) is a refusal: the request goes
  // on, and the resident prefix, whose state is then uncertain, starts over.
  template <class F>
  void guarded(F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      log_warn() << "a cache tier failed (" << e.what() << "); the resident prefix is dropped";
      tiers->clear(cache_tier::resident);
    }
  }
  // Hands the engine `job`'s images for its prompt (set before a session starts, after any
  // restore: the rows the engine holds need no embeddings), the rows in `ready` as they are.
  // Throws what image_media throws.
  void set_media(const board_job& job, const encoded_rows* ready = nullptr) {
    eng->set_media(
        image_media(job.prompt, eng->length(), job.images, opts.vision.get(), eng->config().d_model, ready));
  }
  void take_spills(board_events& out) {
    for (auto& j : pending_spills) out.spill_writes.push_back(std::move(j));
    pending_spills.clear();
  }
  void take_submissions(board_events& out) {
    if (!staging) return;
    for (auto& sub : staging->take_submissions()) out.disk_submissions.push_back(std::move(sub));
  }
};

}  // namespace anchorage
