#include "actors/board.hpp"

#include <caf/all.hpp>

#include "runtime/core/log.hpp"
#include "actors/disk_writer.hpp"
#include "protocol/error_code.hpp"
#include "runtime/io/uring_env.hpp"

namespace anchorage {
namespace {

using board_ptr = board_actor::stateful_pointer<board_state>;

void send_tiers(board_ptr self) {
  self->send(self->state.conductor, tiers_atom::value, self->state.runner->tiers().stats());
}

// Hands a staged write to the disk writer; it comes back (between two steps) to be indexed.
// Nothing waits for it.
void hand_to_writer(board_ptr self, const disk_job_ptr& job) {
  auto& st = self->state;
  auto written = [self](disk_job_ptr j) {
    if (j) self->state.runner->disk_written(*j);
    send_tiers(self);
  };
  if (!st.writer) {  // no writer: write now
    job->results = execute_disk_write(st.runner->tiers().disk()->store().env(), st.runner->slot0().layout(),
                                      job->write, job->plan);
    return written(job);
  }
  self->request(st.writer, caf::infinite, disk_write_atom::value, job)
      .then(written, [self, job](caf::error&) {
        job->results.clear();  // the writer is gone: nothing was indexed, the marks are released
        self->state.runner->disk_written(*job);
        send_tiers(self);  // the staging it held is released (a drain waits for it)
      });
}

// What the runner asked for: the disk writes, the stats, the ledger entry before the sink's
// events (so the conductor knows a request ended before its client does), the next step.
void send_all(board_ptr self, board_events out) {
  auto& st = self->state;
  for (const auto& job : out.disk_jobs) hand_to_writer(self, job);
  if (out.tiers_changed) send_tiers(self);
  if (out.done) self->send(st.conductor, done_atom::value, std::move(*out.done));
  for (auto& ev : out.events) self->send(out.sink, std::move(ev));
  if (out.step_again) self->send(self, step_atom::value);
}

}  // namespace

board_actor::behavior_type board(board_ptr self, std::shared_ptr<engine> eng, board_options opts,
                                 done_receiver conductor) {
  auto& init = self->state;
  board_runner_options ro;
  ro.decode_block = opts.decode_block;
  ro.cache = opts.cache;
  ro.side_slots = std::move(opts.side_slots);
  ro.disk = opts.disk;
  ro.disk_env = opts.disk_env;
  const state_layout layout = eng->layout();
  init.runner = std::make_unique<board_runner>(std::move(eng), std::move(ro));
  if (auto r = init.runner->start_disk()) {
    log_info() << "disk tier in " << init.runner->tiers().disk()->store().folder() << ": " << r->indexed
               << " files indexed, " << r->tmp_reaped << " unfinished writes reaped, " << r->foreign_swept
               << " of another engine swept, " << r->damaged_removed << " damaged removed";
    init.writer = self->spawn<caf::linked>(disk_writer, layout,
                                           opts.writer_env ? opts.writer_env : std::make_shared<uring_env>());
  }
  init.conductor = std::move(conductor);
  send_tiers(self);  // the conductor's stats show the tiers (empty) before the first request
  return {
      [=](run_atom, board_job& j) { send_all(self, self->state.runner->start(std::move(j))); },
      [=](step_atom) {
        auto& st = self->state;
        if (!st.runner->busy()) return;
        ++st.steps;
        send_all(self, st.runner->step());
      },
      [=](cancel_atom, const std::string& id) { self->state.runner->cancel(id); },
      [=](clear_atom, cache_tier tier) -> caf::result<clear_reply> {
        // A tier this server does not have (the disk without --cache-dir) is the client's error.
        auto cleared = self->state.runner->clear(tier);
        if (!cleared) return caf::make_error(error_code::unknown_tier);
        send_tiers(self);
        return clear_reply{tier, std::move(*cleared)};
      },
  };
}

}  // namespace anchorage
