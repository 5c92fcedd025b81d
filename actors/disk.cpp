#include "actors/disk.hpp"

#include <caf/all.hpp>

#include "actors/disk_writer.hpp"
#include "actors/remote_pusher.hpp"
#include "protocol/spill_format.hpp"
#include "runtime/core/log.hpp"
#include "runtime/io/uring_env.hpp"

namespace anchorage {
namespace {

using disk_ptr = disk_actor::stateful_pointer<disk_state>;

// The service's stats and, with a remote level, its counters: the fetches' (this actor's) and
// the pushes' (the pusher's latest answer).
disk_stats stats_of(disk_ptr self) {
  auto& st = self->state;
  disk_stats s = st.service->stats();
  if (st.remote) {
    remote_stats r = st.remote->counters();
    const remote_stats& p = st.pushed;
    r.pushed_files = p.pushed_files;
    r.pushed_bytes = p.pushed_bytes;
    r.push_skipped = p.push_skipped;
    r.push_failures = p.push_failures;
    r.spill_pushes = p.spill_pushes;
    r.backed_off += p.backed_off;
    r.pushes_out = st.pushes_out;
    r.enabled = true;
    r.target = remote_target(st.remote_options->redis);
    r.ns = st.remote_options->redis.ns;
    s.remote = std::move(r);
  }
  return s;
}

// The stats to the subscriber, if any: after every change, before the reply of the message that
// made it, so whatever a reply leads to sees the stats it left.
void publish(disk_ptr self) {
  auto& st = self->state;
  if (st.subscriber) self->send(st.subscriber, stats_atom::value, stats_of(self));
}
template <class R>
R published(disk_ptr self, R reply) {
  publish(self);
  return reply;
}

// Every drain waiting is answered once no write and no push is out.
void answer_drains(disk_ptr self) {
  auto& st = self->state;
  if (!st.out.empty() || st.pushes_out > 0 || st.drains.empty()) return;
  const disk_stats s = stats_of(self);
  for (auto& rp : st.drains) rp.deliver(s);
  st.drains.clear();
}

// Files to the pusher (with a remote level): the store's, or a committed spill's (`job`); its
// answer brings its counters.
void push(disk_ptr self, remote_push_job_ptr job) {
  auto& st = self->state;
  if (!st.remote || !st.pusher || !job || job->paths.empty()) return;
  ++st.pushes_out;
  auto back = [self](const remote_stats* s) {
    auto& now = self->state;
    if (s) now.pushed = *s;
    --now.pushes_out;
    publish(self);
    answer_drains(self);
  };
  self->request(st.pusher, caf::infinite, remote_push_atom::value, std::move(job))
      .then([back](remote_stats s) { back(&s); }, [back](caf::error&) { back(nullptr); });
}
void push(disk_ptr self, std::vector<std::string> paths) {
  auto job = std::make_shared<remote_push_job>();
  job->folder = self->state.service->store().folder();
  job->paths = std::move(paths);
  push(self, remote_push_job_ptr(std::move(job)));
}

// A committed job's anchors to the pusher: every anchor the store now indexes whole, its chunks
// before it.
void push_behind(disk_ptr self, const disk_job& job) {
  if (!self->state.remote || job.write.anchors.empty()) return;
  std::vector<std::size_t> lines;
  for (const staged_anchor& a : job.write.anchors) lines.push_back(a.line);
  push(self, anchor_files(self->state.service->store(), job.write.tokens, job.write.ns, lines));
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
  } else {
    push_behind(self, *w.job);
  }
  publish(self);
  w.reply.deliver(std::move(r));
  answer_drains(self);
}

void spawn_writer(disk_ptr self) {
  auto& st = self->state;
  st.writer = self->spawn<caf::linked>(disk_writer, st.service->store().layout(), st.writer_env);
}

void spawn_pusher(disk_ptr self) {
  auto& st = self->state;
  if (!st.remote_options) return;
  st.pusher = self->spawn<caf::linked + caf::detached>(
      remote_pusher, *st.remote_options, st.service->store().layout().fingerprint, st.remote_push_env);
}

// A local miss, or a local hit shallower than what the prompt could restore, asks the remote
// level first (with one): what it fetches is then indexed here and offered as any local anchor.
void fetch_below(disk_ptr self, const std::vector<token_id>& prompt, std::size_t floor) {
  auto& st = self->state;
  if (!st.remote) return;
  const std::size_t grid = static_cast<std::size_t>(st.service->store().layout().grid);
  if (grid == 0 || prompt.size() < 2) return;
  const std::size_t top = (prompt.size() - 1) / grid * grid;  // the last token is always prefilled
  if (top <= floor) return;
  const remote_fetch_report r = st.remote->fetch(st.service->store(), prompt);
  if (r.line > 0)
    log_info() << "remote cache: fetched " << r.files << " files (" << r.bytes << " bytes) up to line "
               << r.line;
}

// With a remote level and a session spill: the request's spilled conversation (its session and
// head name it), when Redis holds one that would start the prompt deeper than the floor and
// the disk's own hit; its files go to the spill folder, its manifest to the board to adopt.
std::shared_ptr<const fetched_spill> fetch_spill(disk_ptr self, const std::vector<token_id>& prompt,
                                                 const disk_offer_request& req) {
  auto& st = self->state;
  if (!st.remote || st.spill_budget == 0) return nullptr;
  const disk_store& store = st.service->store();
  const auto hit = store.find(prompt);
  const std::size_t floor = std::max(req.floor, hit ? hit->line : std::size_t{0});
  remote_fetch_report r;
  auto f = st.remote->fetch_spill(*st.env, join_path(store.folder(), spill_format::folder_name),
                                  store.layout(), req.session_key, prompt, floor, st.spill_budget, r);
  if (f)
    log_info() << "remote cache: fetched a spilled conversation (" << r.files << " files, " << r.bytes
               << " bytes)";
  return f;
}

// The writer is linked: its exit reaches us as a message. Its jobs out are released (they may
// also come back as errors: whichever comes first settles them) and a new writer takes over.
// The pusher (linked too) is spawned again; its pushes out come back as errors. Any other exit
// (a shutdown) ends this actor as the default handler would.
void exited(disk_ptr self, const caf::exit_msg& m) {
  auto& s = self->state;
  if (s.pusher && m.source == s.pusher.address()) {
    log_warn() << "the remote pusher went away (" << caf::to_string(m.reason) << "); a new one takes over";
    spawn_pusher(self);
    return;
  }
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
  if (opts.remote) {
    init.remote_options = opts.remote;
    init.spill_budget = opts.spill_budget;
    init.remote_push_env =
        opts.remote_push_env ? std::move(opts.remote_push_env) : std::make_shared<uring_env>();
    init.remote_env = std::make_unique<redis_env>(opts.remote->redis);
    init.remote = std::make_unique<remote_disk>(*init.remote_env, opts.layout.fingerprint, opts.remote->disk);
    spawn_pusher(self);
    log_info() << "remote cache: " << remote_target(opts.remote->redis) << ", key namespace "
               << opts.remote->redis.ns;
    // What the folder held at start goes to Redis too (files Redis holds are skipped by name).
    push(self, store_files(init.service->store()));
  }
  self->set_exit_handler([self](caf::exit_msg& m) { exited(self, m); });
  return {
      [self](disk_offer_atom, const disk_offer_request& req) -> disk_offer_reply {
        const std::vector<token_id> prompt(req.prompt.begin(), req.prompt.end());
        fetch_below(self, prompt, req.floor);
        disk_offer_reply reply = self->state.service->offer(prompt, req.floor, req.prefill_tokens_per_s);
        reply.spill = fetch_spill(self, prompt, req);
        return published(self, std::move(reply));
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
      [self](stats_atom) -> disk_stats { return stats_of(self); },
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
        return stats_of(self);
      },
      [self](remote_push_atom, remote_push_job_ptr job) {  // a spill committed on the board
        push(self, std::move(job));
        publish(self);
      },
      [self](drain_atom) -> caf::result<disk_stats> {
        auto& st = self->state;
        if (st.out.empty() && st.pushes_out == 0) return stats_of(self);
        auto rp = self->make_response_promise<disk_stats>();
        st.drains.push_back(rp);
        return rp;
      },
  };
}

}  // namespace anchorage
