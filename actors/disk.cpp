#include "actors/disk.hpp"

#include <caf/all.hpp>

#include "actors/disk_writer.hpp"
#include "runtime/core/log.hpp"
#include "runtime/io/uring_env.hpp"

namespace anchorage {
namespace {

using disk_ptr = disk_actor::stateful_pointer<disk_state>;

// The stats to the subscriber, if any: after every change, before the reply of the message that
// made it, so whatever a reply leads to sees the stats it left.
void publish(disk_ptr self) {
  auto& st = self->state;
  if (st.subscriber) self->send(st.subscriber, stats_atom::value, st.service->stats());
}
template <class R>
R published(disk_ptr self, R reply) {
  publish(self);
  return reply;
}

// Every drain waiting is answered once no write is out.
void answer_drains(disk_ptr self) {
  auto& st = self->state;
  if (!st.out.empty() || st.drains.empty()) return;
  const disk_stats s = st.service->stats();
  for (auto& rp : st.drains) rp.deliver(s);
  st.drains.clear();
}

// A job came back (results filled), or its writer went away (job without results): committed,
// answered, and the drains looked at. A job already settled (the other path came first) is
// ignored.
void settle(disk_ptr self, std::uint64_t id, const disk_job_ptr& done) {
  auto& st = self->state;
  auto it = st.out.find(id);
  if (it == st.out.end()) return;
  disk_state::write_out w = std::move(it->second);
  st.out.erase(it);
  if (done)
    w.job->results = done->results;
  else
    w.job->results.clear();
  disk_write_reply r;
  try {
    r = st.service->commit(*w.job);
  } catch (const std::exception& e) {  // an allocation failed while indexing: counted as failed
    log_error() << "indexing a disk write failed (" << e.what() << ")";
    r.released_bytes = w.job->staged_bytes;
    r.failed = true;
    r.error = e.what();
  }
  if (!done) {
    log_warn() << "a disk write was dropped: its writer went away (its files are indexed nowhere)";
    if (r.error.empty()) r.error = "the disk writer went away";
    r.failed = true;
  }
  publish(self);
  w.reply.deliver(std::move(r));
  answer_drains(self);
}

void spawn_writer(disk_ptr self) {
  auto& st = self->state;
  st.writer = self->spawn<caf::linked>(disk_writer, st.service->store().layout(), st.writer_env);
}

// The writer is linked: its exit reaches us as a message. Its jobs out are released (they may
// also come back as errors: whichever comes first settles them) and a new writer takes over.
// Any other exit (a shutdown) ends this actor as the default handler would.
void exited(disk_ptr self, const caf::exit_msg& m) {
  auto& s = self->state;
  if (m.source != s.writer.address()) {
    self->quit(m.reason);
    return;
  }
  ++s.writers_lost;
  log_warn() << "the disk writer went away (" << caf::to_string(m.reason) << "); a new writer takes over";
  std::vector<std::uint64_t> ids;
  for (const auto& [id, w] : s.out) ids.push_back(id);
  for (std::uint64_t id : ids) settle(self, id, nullptr);
  spawn_writer(self);
}

// A request's staged bytes: prepared by the service and handed to the writer, the reply promised
// until the job comes back (settle); nothing to write is answered at once.
caf::result<disk_write_reply> submit(disk_ptr self, disk_submission_ptr s) {
  auto& st = self->state;
  if (!s) return disk_write_reply{};
  disk_write_reply now;
  std::shared_ptr<disk_job> job;
  try {
    job = st.service->prepare(std::move(*s), now);
  } catch (const std::exception& e) {
    now.failed = true;
    now.error = std::string("planning a disk write failed (") + e.what() + ")";
  }
  if (!job) return published(self, std::move(now));  // nothing to write: released at once
  const std::uint64_t id = st.next_write++;
  auto rp = self->make_response_promise<disk_write_reply>();
  st.out.emplace(id, disk_state::write_out{job, rp});
  self->request(st.writer, caf::infinite, disk_write_atom::value, job)
      .then([self, id](disk_job_ptr done) { settle(self, id, done); },
            [self, id](caf::error&) { settle(self, id, nullptr); });
  publish(self);  // a job more at the writer
  return rp;
}

}  // namespace

disk_actor::behavior_type disk(disk_ptr self, disk_actor_options opts) {
  auto& init = self->state;
  init.env = opts.env ? std::move(opts.env) : std::make_shared<uring_env>();
  init.writer_env = opts.writer_env ? std::move(opts.writer_env) : std::make_shared<uring_env>();
  init.clock = opts.clock ? std::move(opts.clock) : std::make_shared<system_eviction_clock>();
  init.service = std::make_unique<disk_service>(*init.env, opts.layout, *init.clock, std::move(opts.tier));
  // The scan runs here, at this actor's own start, not on whoever spawned it.
  init.scan = init.service->start();
  init.started = true;
  spawn_writer(self);
  self->set_exit_handler([self](caf::exit_msg& m) { exited(self, m); });
  return {
      [self](disk_offer_atom, const disk_offer_request& req) -> disk_offer_reply {
        const std::vector<token_id> prompt(req.prompt.begin(), req.prompt.end());
        return published(self, self->state.service->offer(prompt, req.floor, req.prefill_tokens_per_s));
      },
      [self](disk_read_atom, const disk_read_request& req) -> disk_read_reply {
        try {
          return published(self, self->state.service->start_read(req));
        } catch (const std::exception& e) {  // a buffer that could not be allocated
          disk_read_reply r;
          r.error = std::string("the disk read failed (") + e.what() + ")";
          return published(self, std::move(r));
        }
      },
      [self](disk_plan_atom, const disk_plan_request& req) -> disk_write_lines {
        return published(self, self->state.service->plan_writes(req));
      },
      [self](disk_submit_atom, disk_submission_ptr s) { return submit(self, std::move(s)); },
      [self](generation_started_atom, std::uint64_t key) {
        self->state.service->generation_started(key);
        return published(self, true);
      },
      [self](generation_finished_atom, std::uint64_t key) {  // its checkpoint removed
        self->state.service->generation_finished(key);
        return published(self, true);
      },
      [self](stats_atom) -> disk_stats { return self->state.service->stats(); },
      [self](stats_atom, disk_stats_receiver to) {
        self->state.subscriber = std::move(to);
        publish(self);
      },
      [self](clear_atom) -> disk_clear_reply { return published(self, self->state.service->clear()); },
      [self](disk_entries_atom, std::size_t limit) { return self->state.service->list_entries(limit); },
      [self](settings_atom, const cache_settings& s) -> disk_stats {
        const std::size_t evicted = self->state.service->set_limits(s);
        if (evicted > 0) log_info() << "the disk tier's new limits evicted " << evicted << " files";
        publish(self);
        return self->state.service->stats();
      },
      [self](drain_atom) -> caf::result<disk_stats> {
        auto& st = self->state;
        if (st.out.empty()) return st.service->stats();
        auto rp = self->make_response_promise<disk_stats>();
        st.drains.push_back(rp);
        return rp;
      },
  };
}

}  // namespace anchorage
