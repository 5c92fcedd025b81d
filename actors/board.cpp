#include "actors/board.hpp"

#include <caf/all.hpp>

#include "protocol/error_code.hpp"

namespace anchorage {
namespace {

using board_ptr = board_actor::stateful_pointer<board_state>;

void send_all(board_ptr self, board_events out);

void send_tiers(board_ptr self) {
  self->send(self->state.conductor, tiers_atom::value, self->state.runner->stats());
}

// The disk's part of what the runner asked for: the read (at high priority, so it passes the
// disk's queued submissions) and the plan come back to the runner as messages between steps;
// a submission's reply releases its staging. Nothing here waits: without a disk actor the
// read fails and the plan is empty.
void send_to_disk(board_ptr self, board_events& out) {
  auto& st = self->state;
  auto again = [self](board_events next) { send_all(self, std::move(next)); };
  if (out.disk_read) {
    if (!st.disk) {
      disk_read_reply none;
      none.error = "no disk actor";
      again(st.runner->restored(std::move(none)));
    } else {
      self->request<caf::message_priority::high>(st.disk, caf::infinite, disk_read_atom::value,
                                                 *out.disk_read)
          .then([self, again](disk_read_reply& r) { again(self->state.runner->restored(std::move(r))); },
                [self, again](caf::error& e) {
                  disk_read_reply none;
                  none.error = caf::to_string(e);
                  again(self->state.runner->restored(std::move(none)));
                });
    }
  }
  if (out.disk_plan) {
    if (!st.disk) {
      again(st.runner->planned({}));
    } else {
      self->request(st.disk, caf::infinite, disk_plan_atom::value, *out.disk_plan)
          .then([self, again](disk_write_lines& l) { again(self->state.runner->planned(l)); },
                [self, again](caf::error&) { again(self->state.runner->planned({})); });
    }
  }
  for (auto& sub : out.disk_submissions) {
    const std::uint64_t bytes = sub->staged_bytes;
    auto release = [self](std::uint64_t b) {
      self->state.runner->disk_released(b);
      send_tiers(self);  // a drain waits for the staging to come down
    };
    if (!st.disk) {
      release(bytes);
      continue;
    }
    self->request(st.disk, caf::infinite, disk_submit_atom::value, sub)
        .then([release](disk_write_reply& r) { release(r.released_bytes); },
              [release, bytes](caf::error&) { release(bytes); });
  }
  if (!st.disk) return;
  for (auto key : out.generations_started) self->send(st.disk, generation_started_atom::value, key);
  for (auto key : out.generations_finished) self->send(st.disk, generation_finished_atom::value, key);
}

// What the runner asked for: the disk's messages, the stats, the ledger entry before the sink's
// events (so the conductor knows a request ended before its client does), the next step.
void send_all(board_ptr self, board_events out) {
  auto& st = self->state;
  send_to_disk(self, out);
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
  init.runner = std::make_unique<board_runner>(std::move(eng), std::move(ro));
  if (init.runner->has_disk()) init.disk = opts.disk_handle;
  init.conductor = std::move(conductor);
  send_tiers(self);  // the conductor's stats show the tiers (empty) before the first request
  return {
      [=](run_atom, board_job& j) { send_all(self, self->state.runner->start(std::move(j))); },
      [=](step_atom) {
        auto& st = self->state;
        if (st.runner->current_phase() != board_runner::phase::running) return;
        ++st.steps;
        send_all(self, st.runner->step());
      },
      [=](cancel_atom, const std::string& id) { self->state.runner->cancel(id); },
      [=](clear_atom, cache_tier tier) -> caf::result<clear_reply> {
        auto& st = self->state;
        // A tier this server does not have (the disk without --cache-dir) is the client's error.
        auto cleared = st.runner->clear(tier);
        if (!cleared) return caf::make_error(error_code::unknown_tier);
        const bool disk = std::find(cleared->begin(), cleared->end(), cache_tier::disk) != cleared->end();
        if (!disk || !st.disk) {
          send_tiers(self);
          return clear_reply{tier, std::move(*cleared)};
        }
        // The disk's files are the disk actor's: the reply waits for its clear.
        auto rp = self->make_response_promise<clear_reply>();
        self->request(st.disk, caf::infinite, clear_atom::value)
            .then(
                [self, rp, tier, c = *cleared](disk_clear_reply&) mutable {
                  send_tiers(self);
                  rp.deliver(clear_reply{tier, std::move(c)});
                },
                [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
  };
}

}  // namespace anchorage
