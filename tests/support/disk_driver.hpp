#pragma once
// The disk actor, synchronous, for tests of the board's work without actors: a disk_service on
// an env answers a board_runner's disk messages at once (an offer, a read, a plan; a submission
// planned, written through the same env and committed, its staging released), and run_to_end()
// drives a request from start() to its last event.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/disk/disk_service.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/io/uring_env.hpp"
#include "runtime/spill/spill_store.hpp"
#include "runtime/board/board_runner.hpp"

namespace anchorage::testing {

struct disk_driver {
  system_eviction_clock clock;
  std::unique_ptr<disk_service> service;
  file_env& env;
  disk_scan_report scan;
  long submissions = 0;

  disk_driver(file_env& e, const state_layout& layout, const disk_tier_options& o) : env(e) {
    service = std::make_unique<disk_service>(env, layout, clock, o);
    scan = service->start();
  }

  // The disk's answer to a run's offer request (as the disk actor gives it).
  disk_offer_reply offer(const disk_offer_request& rq) const {
    const std::vector<token_id> prompt(rq.prompt.begin(), rq.prompt.end());
    return service->offer(prompt, rq.floor, rq.prefill_tokens_per_s);
  }

  // The submissions and generations in `out`, answered now.
  void serve_writes(board_runner& r, board_events& out) {
    for (auto& sub : out.disk_submissions) {
      ++submissions;
      const std::uint64_t staged = sub->staged_bytes;
      disk_write_reply reply;
      auto job = service->prepare(std::move(*sub), reply);
      if (job) {
        job->results = execute_disk_write(env, service->store().layout(), job->write, job->plan);
        reply = service->commit(*job);
      }
      r.disk_released(job ? reply.released_bytes : (reply.released_bytes ? reply.released_bytes : staged));
    }
    out.disk_submissions.clear();
    for (auto k : out.generations_started) service->generation_started(k);
    for (auto k : out.generations_finished) service->generation_finished(k);
    out.generations_started.clear();
    out.generations_finished.clear();
  }
};

struct run_result {
  std::vector<stream_event> events;
  std::optional<ledger_entry> done;
  std::string text;
  long steps = 0;
};

// Steps until the request ends (at most `max_steps`), the disk's messages, the spill reads and
// the images to encode answered as they come.
inline run_result run_to_end(board_runner& r, board_events first, disk_driver* disk = nullptr,
                             long max_steps = 100000) {
  run_result res;
  board_events out = std::move(first);
  for (;;) {
    if (disk) disk->serve_writes(r, out);
    for (auto& ev : out.events) {
      for (const auto& d : ev.deltas) res.text += d.text;
      res.events.push_back(std::move(ev));
    }
    if (out.done) res.done = out.done;
    if (out.disk_offer) {  // without a disk: no offer, as the board answers without a disk actor
      out = r.offered(disk ? disk->offer(*out.disk_offer) : disk_offer_reply{});
      continue;
    }
    if (disk && out.disk_read) {
      out = r.restored(disk->service->start_read(*out.disk_read));
      continue;
    }
    if (out.spill_read) {
      // The spill reader's part, here: its own env, as the actor has.
      uring_env reader;
      execute_spill_read(reader, *out.spill_read);
      out = r.spill_fetched(std::move(out.spill_read));
      continue;
    }
    if (out.vision_encode) {
      // The vision encoder's part, here.
      execute_vision_encode(*out.vision_encode);
      out = r.encoded(std::move(out.vision_encode));
      continue;
    }
    if (disk && out.disk_plan) {
      out = r.planned(disk->service->plan_writes(*out.disk_plan));
      continue;
    }
    if (!out.step_again || res.steps >= max_steps) return res;
    ++res.steps;
    out = r.step();
  }
}

// A runner's options for tests: small decode blocks, device tiers of a few hundred MiB.
inline board_runner_options small_runner_options() {
  board_runner_options o;
  o.decode_block = 2;
  o.cache.resident_bytes = 256ULL << 20;
  o.cache.store_bytes = 256ULL << 20;
  o.cache.store_entry_bytes = 128ULL << 20;
  return o;
}

// A disk tier in `dir` for tests: no free-space floor, so what a test writes never depends on
// the machine's free space.
inline disk_tier_options test_disk_options(const std::string& dir) {
  disk_tier_options d;
  d.store.dir = dir;
  d.store.eviction.min_free_bytes = 0;
  return d;
}

inline board_job job_of(const std::vector<token_id>& prompt, long max_tokens, const std::string& id = "r1",
                        const std::string& session = "s") {
  board_job j;
  j.id = id;
  j.route = request_kind::completion;
  j.session_key = session;
  j.prompt.assign(prompt.begin(), prompt.end());
  j.sampling.temperature = 0;
  j.sampling.max_tokens = max_tokens;
  return j;
}

}  // namespace anchorage::testing
