#pragma once
// The main path (runtime/board/run.hpp): the tiers' plan for the prompt made when the run
// starts (with a disk tier, once the disk's offer for a client's request came); a spilled
// conversation read and verified by the spill reader, then (with a disk tier) a checkpoint of
// this generation or the disk's prefix read by the disk actor, then the images its prefill
// forwards that the vision cache does not hold encoded by the vision encoder, while the run
// waits in its restoring phase; the plan restored into the slot's engine (any failure is the
// cold path); the disk's admission of its writes asked for in the planning phase; then a
// prefill chunk or a decode block per step, the tiers anchoring after each chunk and
// checkpoints staged every --generation-checkpoint-tokens. At the end the tiers keep the end
// anchor and the session snapshot, the suffix store gets the ids, the response cache the answer
// of a determined request. A generation checkpoint's resume is one of its restore sources.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/board/run.hpp"
#include "runtime/cache/response_key.hpp"

namespace anchorage {

class generation_run : public run {
 public:
  // `response`: the response cache's key for a determined request (none: not one, or no cache).
  generation_run(slot_state& slot, board_job job, std::int64_t start_ns,
                 std::optional<response_key> response);

  board_events start() override;
  board_events offered(disk_offer_reply reply) override;
  board_events spill_fetched(spill_fetch_ptr f) override;
  board_events encoded(vision_encode_ptr job) override;
  board_events restored(disk_read_reply reply) override;
  board_events planned(const disk_write_lines& lines) override;
  void cleared(const std::vector<cache_tier>& done) override;

 protected:
  // What the kind is (a continuation's overrides): whether a generation checkpoint names it,
  // whether it runs as a guest whatever its length, whether its prefill is the disk's to write,
  // how its `via` reads, and whether the tiers keep its end anchor.
  virtual bool checkpointed() const { return true; }
  virtual bool force_guest() const { return false; }
  virtual bool stages_disk() const { return true; }
  // Whether a client's request of the kind asks the disk for its offer (a continuation does
  // not: its prompt is the held conversation, above the end anchor the device tiers hold).
  virtual bool reads_disk() const { return true; }
  virtual cache_via served_via(cache_via via) const { return via; }
  virtual bool keeps_end() const { return true; }
  // Whether the suffix store gets its ids and the slot's end anchor becomes its conversation's.
  virtual bool leaves_conversation() const { return true; }

  void after_prefill_chunk(board_events& out) override;
  void after_tokens(board_events& out) override;
  void finish(board_events& out) override;
  // The end's first part, every kind's: the checkpoints' end, the end anchor, the suffix store's
  // ids, the slot's end session, the tiers' finish, the response cache.
  void keep(board_events& out);

 private:
  generation_job session_job() const;
  request_info plan_info() const;
  board_events fetch();
  board_events checkpoint_read();
  void replan();
  resume_offer cold_after_failure(const resume_offer& failed);
  cache_source restore_start(resume_offer& o);
  void start_session(resume_offer& o);
  std::optional<board_events> encode_first();
  board_events begin_request();
  bool resume_checkpoint(const verified_checkpoint& c, board_events& out);
  void keep_end();
  void keep_response();
  void finish_staging(board_events& out);

  std::vector<token_id> asked_;      // the prompt as planned (the client's, or the continuation's)
  resume_offer pending_;             // the plan made at start(), restored once the reads answered
  bool replan_ = false;              // a clear came while restoring: the plan is stale
  bool offering_ = false;            // restoring: the disk's offer is asked for, the plan not made
  bool fetching_spill_ = false;      // restoring: the spill reader reads the planned conversation
  bool encoding_ = false;            // restoring: the vision encoder encodes the prompt's images
  bool encode_failed_ = false;       // its answer was a failure: image_media meets it in place
  encoded_rows encoded_;             // what it encoded for this prompt (kept whatever the cache keeps)
  std::uint64_t job_key_ = 0;        // the generation's checkpoint key (generation_key); 0: none
  bool served_as_asked_ = true;      // the served prompt is the client's (no end alignment)
  std::size_t next_checkpoint_ = 0;  // output ids at which the next checkpoint is staged
  bool staging_active_ = false;      // the run writes to the disk
  std::optional<response_key> response_key_;
};

}  // namespace anchorage
