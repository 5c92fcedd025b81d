// The board actor's outbox (actors/board.hpp): what a slot's events ask for, sent to the disk
// actor, the spill reader and writer, the suffix writer, the conductor and the sinks; the
// planned stop's spill and a clear by name, each answered once the actors they involve answered.
#include <caf/all.hpp>

#include <algorithm>
#include <functional>

#include "actors/board_outbox.hpp"
#include "protocol/error_code.hpp"
#include "runtime/suffix/suffix_snapshot.hpp"
#include "runtime/core/log.hpp"
#include "runtime/io/clock.hpp"

namespace anchorage {

cache_stats tiers_now(board_ptr self) {
  auto& st = self->state;
  cache_stats c = st.slots->stats();
  c.suffix = st.suffix_stats;
  if (c.suffix && st.suffix_view) {
    c.suffix->lookups = st.suffix_view->view().lookups();
    c.suffix->hits = st.suffix_view->view().hits();
  }
  return c;
}

void send_tiers(board_ptr self) { self->send(self->state.conductor, tiers_atom::value, tiers_now(self)); }

void answer_quiesces(board_ptr self) {
  auto& st = self->state;
  if (st.quiesces.empty() || st.writes_out > 0 || !st.slots->quiet()) return;
  auto deliver = [self, waiting = std::move(st.quiesces)]() mutable {
    const cache_stats now = tiers_now(self);
    for (auto& rp : waiting) rp.deliver(now);
  };
  st.quiesces.clear();
  if (!st.suffix_writer) return deliver();
  // Its updates for the adds sent before come ahead of its answer (one sender, in order).
  self->request(st.suffix_writer, caf::infinite, quiesce_atom::value)
      .then([deliver](bool) mutable { deliver(); }, [deliver](caf::error&) mutable { deliver(); });
}

// A generation's start or end to the disk (its checkpoint kept, or removed): out, like a write,
// until the disk answers, so a quiesce waits for it.
template <class Atom>
void send_generation_mark(board_ptr self, Atom what, std::uint64_t key) {
  ++self->state.writes_out;
  auto answered = [self] {
    --self->state.writes_out;
    answer_quiesces(self);
  };
  self->request(self->state.disk, caf::infinite, what, key)
      .then([answered](bool) { answered(); }, [answered](caf::error&) { answered(); });
}

// What the suffix store's writer sent, into the view the drafters read.
void install_suffix(board_ptr self, const suffix_update& u) {
  auto& st = self->state;
  if (st.suffix_view) {
    if (u.snapshot) st.suffix_view->view().install(u.snapshot);
    if (u.delta) st.suffix_view->view().extend(*u.delta);
  }
  st.suffix_stats = u.stats;
}

// The suffix store emptied by its writer, then `then` (also when the writer is gone).
void clear_suffix(board_ptr self, std::function<void()> then) {
  auto& st = self->state;
  if (!st.suffix_writer) return then();
  self->request(st.suffix_writer, caf::infinite, clear_atom::value)
      .then(
          [self, then](suffix_update& u) {
            install_suffix(self, u);
            then();
          },
          [then](caf::error&) { then(); });
}

namespace {

// The disk's part of what the runner asked for: the offer and the read (at high priority, so
// they pass the disk's queued submissions) and the plan come back to the runner as messages
// between steps; a submission's reply releases its staging. Nothing here waits: without a disk
// actor there is no offer, the read fails and the plan is empty.
void send_to_disk(board_ptr self, std::size_t slot, board_events& out) {
  auto& st = self->state;
  auto again = [self](slot_events next) { send_all(self, std::move(next)); };
  if (out.disk_offer) {
    if (!st.disk) {
      again(st.slots->offered(slot, {}));
    } else {
      self->request<caf::message_priority::high>(st.disk, caf::infinite, disk_offer_atom::value,
                                                 *out.disk_offer)
          .then([self, again,
                 slot](disk_offer_reply& r) { again(self->state.slots->offered(slot, std::move(r))); },
                [self, again, slot](caf::error&) { again(self->state.slots->offered(slot, {})); });
    }
  }
  if (out.disk_read) {
    if (!st.disk) {
      disk_read_reply none;
      none.error = "no disk actor";
      again(st.slots->restored(slot, std::move(none)));
    } else {
      self->request<caf::message_priority::high>(st.disk, caf::infinite, disk_read_atom::value,
                                                 *out.disk_read)
          .then([self, again,
                 slot](disk_read_reply& r) { again(self->state.slots->restored(slot, std::move(r))); },
                [self, again, slot](caf::error& e) {
                  disk_read_reply none;
                  none.error = caf::to_string(e);
                  again(self->state.slots->restored(slot, std::move(none)));
                });
    }
  }
  if (out.disk_plan) {
    if (!st.disk) {
      again(st.slots->planned(slot, {}));
    } else {
      self->request(st.disk, caf::infinite, disk_plan_atom::value, *out.disk_plan)
          .then([self, again, slot](disk_write_lines& l) { again(self->state.slots->planned(slot, l)); },
                [self, again, slot](caf::error&) { again(self->state.slots->planned(slot, {})); });
    }
  }
  for (auto& sub : out.disk_submissions) {
    const std::uint64_t bytes = sub->staged_bytes;
    auto release = [self, slot](std::uint64_t b) {
      self->state.slots->disk_released(slot, b);
      send_tiers(self);  // a drain waits for the staging to come down
    };
    if (!st.disk) {
      release(bytes);
      continue;
    }
    ++st.writes_out;
    auto answered = [self, release](std::uint64_t b) {
      --self->state.writes_out;
      release(b);
      answer_quiesces(self);
    };
    self->request(st.disk, caf::infinite, disk_submit_atom::value, sub)
        .then([answered](disk_write_reply& r) { answered(r.released_bytes); },
              [answered, bytes](caf::error&) { answered(bytes); });
  }
  if (!st.disk) return;
  for (auto key : out.generations_started) send_generation_mark(self, generation_started_atom::value, key);
  for (auto key : out.generations_finished) send_generation_mark(self, generation_finished_atom::value, key);
}

// A staged spill to the writer (write-behind: nothing waits for it); its results come back to
// the keeper, which indexes what was written, then `then` runs. Without a writer nothing is
// written and the job is committed empty (its plan's marks released).
void send_spill(board_ptr self, spill_job_ptr job, std::function<void(const spill_write_report&)> then) {
  auto& st = self->state;
  auto commit = [self, then](spill_job_ptr j) {
    spill_keeper* k = self->state.slots->spill();
    spill_write_report r;
    if (k && j) r = k->committed(*j);
    // What it wrote goes to the shared level behind it, through the disk actor (with one).
    if (k && j && !r.failed && !r.refused && self->state.disk) {
      auto push = std::make_shared<remote_push_job>();
      push->folder = k->store().folder();
      push->paths = k->store().paths_of(j->image.manifest.id);
      push->spill = true;
      if (!push->paths.empty())
        self->send(self->state.disk, remote_push_atom::value, remote_push_job_ptr(push));
    }
    send_tiers(self);
    if (then) then(r);
    // The requests that waited for this conversation's commit start now.
    for (auto& ev : self->state.slots->spill_committed()) send_all(self, std::move(ev));
  };
  if (!st.spill_writer) return commit(std::move(job));
  ++st.writes_out;
  auto answered = [self, commit](spill_job_ptr j) {
    --self->state.writes_out;
    commit(std::move(j));
    answer_quiesces(self);
  };
  self->request(st.spill_writer, caf::infinite, spill_write_atom::value, job)
      .then([answered](spill_job_ptr& done) { answered(std::move(done)); },
            [answered, job](caf::error&) {
              job->results.clear();
              answered(job);
            });
}

// A slot's spilled conversation to read: the spill reader reads and verifies it on its own
// thread while the board serves the other slots; its reply goes back to that slot. Without a
// reader (tests without actors) the board reads it itself.
void send_spill_read(board_ptr self, std::size_t slot, spill_fetch_ptr f) {
  auto& st = self->state;
  auto again = [self, slot](spill_fetch_ptr done) {
    send_all(self, self->state.slots->spill_fetched(slot, std::move(done)));
  };
  if (!st.spill_reader) {
    if (spill_keeper* k = st.slots->spill(); k && f) k->execute_here(*f);
    return again(std::move(f));
  }
  self->request(st.spill_reader, caf::infinite, spill_read_atom::value, f)
      .then([again](spill_fetch_ptr& done) { again(std::move(done)); },
            [again, f](caf::error& e) {
              f->failure = "the spill reader failed: " + caf::to_string(e);
              again(f);
            });
}

// A slot's images to encode: the vision encoder encodes them on its own thread while the board
// serves the other slots; its reply goes back to that slot. Without an encoder (tests without
// actors) the board encodes them itself.
void send_vision_encode(board_ptr self, std::size_t slot, vision_encode_ptr job) {
  auto& st = self->state;
  auto again = [self, slot](vision_encode_ptr done) {
    send_all(self, self->state.slots->encoded(slot, std::move(done)));
  };
  if (!st.vision_encoder) {
    if (job) execute_vision_encode(*job);
    return again(std::move(job));
  }
  self->request(st.vision_encoder, caf::infinite, vision_encode_atom::value, job)
      .then([again](vision_encode_ptr& done) { again(std::move(done)); },
            [again, job](caf::error& e) {
              job->rows.clear();
              job->failure = "the vision encoder failed: " + caf::to_string(e);
              again(job);
            });
}

}  // namespace

// What a slot asked for: the disk's messages, the stats, the ledger entry before the sink's
// events (so the conductor knows a request ended before its client does), and one step message
// whenever some slot waits for a step.
void send_all(board_ptr self, slot_events tagged) {
  auto& st = self->state;
  board_events& out = tagged.events;
  send_to_disk(self, tagged.slot, out);
  if (out.spill_read) send_spill_read(self, tagged.slot, std::move(out.spill_read));
  if (out.vision_encode) send_vision_encode(self, tagged.slot, std::move(out.vision_encode));
  for (auto& job : out.spill_writes) send_spill(self, std::move(job), nullptr);
  if (out.tiers_changed) send_tiers(self);
  if (out.idle && st.idle) {
    st.idle->deliver(*out.idle);
    st.idle.reset();
  }
  if (out.suffix_add && st.suffix_writer)
    self->send(st.suffix_writer, suffix_add_atom::value, out.suffix_add);
  if (out.done) self->send(st.conductor, done_atom::value, std::move(*out.done));
  for (auto& ev : out.events) self->send(out.sink, std::move(ev));
  if (!st.step_queued && st.slots->wants_step()) {
    st.step_queued = true;
    self->send(self, step_atom::value);
  }
  answer_quiesces(self);
}

// A request or a hold needs the board: idle work stops first, between two of its steps.
void preempt_idle(board_ptr self) {
  for (auto& ev : self->state.slots->preempt_idle()) send_all(self, std::move(ev));
}

// A planned stop (the conductor asks once nothing runs): every slot's resident and parked
// conversations spilled, answered once each is written and indexed.
caf::result<spill_stop_reply> spill_for_stop(board_ptr self) {
  preempt_idle(self);
  auto& st = self->state;
  const std::int64_t t0 = steady_ns();
  std::vector<spill_job_ptr> jobs = st.slots->spill_for_stop();
  if (jobs.empty()) return spill_stop_reply{};
  log_info() << "session spill: writing " << jobs.size() << " conversation(s) before the stop";
  auto rp = self->make_response_promise<spill_stop_reply>();
  auto tally = std::make_shared<spill_stop_reply>();
  tally->conversations = jobs.size();
  auto left = std::make_shared<std::size_t>(jobs.size());
  for (auto& job : jobs) {
    const std::size_t tokens = job->image.manifest.tokens.size();
    send_spill(self, std::move(job), [rp, tally, left, t0, tokens](const spill_write_report& r) mutable {
      if (r.failed || r.refused) {
        ++tally->failed;
      } else {
        ++tally->written;
      }
      tally->bytes += r.bytes_written;
      log_info() << "session spill: " << tokens << " tokens, " << r.blocks_written << " blocks written, "
                 << r.blocks_present << " on disk already (" << r.bytes_written << " bytes)"
                 << (r.failed ? ", failed: " + r.error : std::string());
      if (--*left > 0) return;
      tally->seconds = static_cast<double>(steady_ns() - t0) / 1e9;
      rp.deliver(*tally);
    });
  }
  return rp;
}

// A clear by name: the device tiers here, the disk's files the disk actor's and the suffix store
// its writer's (the reply waits for their clears).
caf::result<clear_reply> clear_tier(board_ptr self, cache_tier tier) {
  preempt_idle(self);
  auto& st = self->state;
  // The suffix store is its writer's: the reply waits for its clear.
  if (tier == cache_tier::suffix) {
    if (!st.suffix_writer) return caf::make_error(error_code::unknown_tier);
    auto rp = self->make_response_promise<clear_reply>();
    clear_suffix(self, [self, rp]() mutable {
      send_tiers(self);
      rp.deliver(clear_reply{cache_tier::suffix, {cache_tier::suffix}});
    });
    return rp;
  }
  // A tier this server does not have (the disk without --cache-dir) is the client's error.
  auto cleared = st.slots->clear(tier);
  if (!cleared) return caf::make_error(error_code::unknown_tier);
  const bool disk = std::find(cleared->begin(), cleared->end(), cache_tier::disk) != cleared->end();
  const bool suffix = tier == cache_tier::all && st.suffix_writer;
  if (suffix) cleared->push_back(cache_tier::suffix);
  if ((!disk || !st.disk) && !suffix) {
    send_tiers(self);
    return clear_reply{tier, std::move(*cleared)};
  }
  // The disk's files are the disk actor's and the suffix store its writer's: the reply
  // waits for their clears.
  auto rp = self->make_response_promise<clear_reply>();
  auto finish = [self, rp, tier, c = *cleared]() mutable {
    send_tiers(self);
    rp.deliver(clear_reply{tier, std::move(c)});
  };
  auto then_disk = [self, rp, finish, disk]() mutable {
    if (!disk || !self->state.disk) return finish();
    self->request(self->state.disk, caf::infinite, clear_atom::value)
        .then([finish](disk_clear_reply&) mutable { finish(); },
              [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
  };
  if (suffix)
    clear_suffix(self, then_disk);
  else
    then_disk();
  return rp;
}

}  // namespace anchorage
