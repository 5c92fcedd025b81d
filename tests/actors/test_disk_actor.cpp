// The disk tier actor on CAF's deterministic scheduler: it scans at its own start, a read passes
// writes queued before it, a drain waits for the writes out and nothing else, a writer that goes
// away releases its jobs, stats and clear answer typed structs, and a subscriber is told the
// stats after every change, before the change's reply.
#include <catch2/catch.hpp>

#include <functional>
#include <utility>

#include "actors/disk.hpp"
#include "actors/disk_writer.hpp"
#include "runtime/disk/disk_service.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/disk_store_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// What the probe's requests got back, in the order the answers arrived.
struct probe_log {
  std::vector<std::string> order;
  std::vector<disk_offer_reply> offers;
  std::vector<disk_read_reply> reads;
  std::vector<disk_write_reply> writes;
  std::vector<disk_stats> stats;  // stats and drain answers
  std::vector<disk_clear_reply> clears;
  std::vector<disk_stats> published;        // what the disk sent its subscriber (the probe, when told)
  std::function<void()> at_read, at_drain;  // run as the answer arrives
};

// Sends what it is told to the disk actor as a request (reads at high priority, as the board
// will) and keeps the answers.
caf::behavior probe(caf::event_based_actor* self, disk_actor d, std::shared_ptr<probe_log> log) {
  return {
      [=](disk_offer_atom, disk_offer_request& r) {
        self->request(d, caf::infinite, disk_offer_atom::value, std::move(r)).then([=](disk_offer_reply& o) {
          log->order.push_back("offer");
          log->offers.push_back(std::move(o));
        });
      },
      [=](disk_read_atom, disk_read_request& r) {
        self->request<caf::message_priority::high>(d, caf::infinite, disk_read_atom::value, std::move(r))
            .then([=](disk_read_reply& rr) {
              log->order.push_back("read");
              if (log->at_read) log->at_read();
              log->reads.push_back(std::move(rr));
            });
      },
      [=](disk_submit_atom, disk_submission_ptr s) {
        self->request(d, caf::infinite, disk_submit_atom::value, std::move(s)).then([=](disk_write_reply& w) {
          log->order.push_back("write");
          log->writes.push_back(std::move(w));
        });
      },
      [=](drain_atom) {
        self->request(d, caf::infinite, drain_atom::value).then([=](disk_stats& s) {
          log->order.push_back("drain");
          if (log->at_drain) log->at_drain();
          log->stats.push_back(std::move(s));
        });
      },
      [=](stats_atom) {
        self->request(d, caf::infinite, stats_atom::value).then([=](disk_stats& s) {
          log->order.push_back("stats");
          log->stats.push_back(std::move(s));
        });
      },
      [=](clear_atom) {
        self->request(d, caf::infinite, clear_atom::value).then([=](disk_clear_reply& c) {
          log->order.push_back("clear");
          log->clears.push_back(c);
        });
      },
      [=](stats_atom, disk_stats& s) {  // as a subscriber
        log->order.push_back("published");
        log->published.push_back(std::move(s));
      },
  };
}

struct actor_bench : bench {
  caf_fixture f;
  std::shared_ptr<probe_log> log = std::make_shared<probe_log>();

  disk_tier_options options() const {
    disk_tier_options o;
    o.store = options_in(dir.str());
    o.admission.min_tokens = 64;
    return o;
  }
  // Writes an anchor at e.length() through a service of its own (an earlier process).
  void write_before(const engine& e, const std::vector<token_id>& prompt) {
    disk_service s(env, layout, clock, options());
    s.start();
    disk_write_reply now;
    disk_submission sub;
    sub.write = stage(e, prompt, "", false);
    auto job = s.prepare(std::move(sub), now);
    REQUIRE(job);
    job->results = execute_disk_write(env, layout, job->write, job->plan);
    REQUIRE_FALSE(s.commit(*job).failed);
  }
  disk_actor spawn_disk() {
    disk_actor_options o;
    o.layout = layout;
    o.tier = options();
    o.env = std::make_shared<uring_env>();
    o.writer_env = std::make_shared<uring_env>();
    o.clock = std::make_shared<manual_clock>(clock.now_s());
    return f.spawn(disk, o);
  }
  caf::actor spawn_probe(const disk_actor& d) { return f.spawn(probe, d, log); }
  // An earlier process left head's anchor at 3 g; the disk actor starts (its scan run) over it.
  std::pair<disk_actor, caf::actor> started_over(const std::vector<token_id>& head) {
    auto cold = prefilled(c, head, 3 * g);
    write_before(*cold, head);
    auto d = spawn_disk();
    f.sched->run();
    return {d, spawn_probe(d)};
  }
  disk_submission_ptr submission(const engine& e, const std::vector<token_id>& prompt) {
    auto s = std::make_shared<disk_submission>();
    s->write = stage(e, prompt, "", false);
    s->staged_bytes = s->write.bytes();
    return s;
  }
  disk_state& state(const disk_actor& d) { return caf_fixture::state_of<disk_state>(d); }
};

}  // namespace

TEST_CASE("the disk actor scans at its own start and a read passes writes queued before it",
          "[actors][disk]") {
  actor_bench b;
  const auto head = test_tokens(4 * b.g + 5);
  auto cold = prefilled(b.c, head, 3 * b.g);
  b.write_before(*cold, head);

  auto d = b.spawn_disk();
  auto& st = b.state(d);
  CHECK_FALSE(st.started);  // spawning ran nothing: the scan is the actor's own first work
  b.f.sched->run();
  REQUIRE(st.started);
  CHECK(st.scan.indexed == 4);
  auto p = b.spawn_probe(d);

  disk_offer_request oq;
  oq.prompt.assign(head.begin(), head.end());
  caf::anon_send(p, disk_offer_atom::value, oq);
  b.f.sched->run();
  REQUIRE(b.log->offers.size() == 1);
  REQUIRE(b.log->offers[0].offer);

  // Two writes of other prompts, then the read: all in the disk's mailbox before it runs.
  std::vector<std::unique_ptr<engine>> writers;
  std::vector<std::uint64_t> staged;
  for (std::uint64_t seed : {11, 12}) {
    const auto t = test_tokens(2 * b.g + 3, seed);
    writers.push_back(prefilled(b.c, t, 2 * b.g));
    auto s = b.submission(*writers.back(), t);
    staged.push_back(s->staged_bytes);
    caf::anon_send(p, disk_submit_atom::value, s);
  }
  disk_read_request rq;
  rq.prompt = oq.prompt;
  rq.offer = b.log->offers[0].offer;
  caf::anon_send(p, disk_read_atom::value, rq);
  b.f.run_only(p);
  long writer_jobs_at_read = -1;
  b.log->at_read = [&] { writer_jobs_at_read = caf_fixture::state_of<disk_writer_state>(st.writer).jobs; };
  b.f.sched->run();

  CHECK(b.log->order == std::vector<std::string>{"offer", "read", "write", "write"});
  CHECK(writer_jobs_at_read == 0);  // answered before the writer wrote anything
  REQUIRE(b.log->reads.size() == 1);
  const disk_read_reply& r = b.log->reads[0];
  INFO(r.error);
  REQUIRE(r.kind == disk_read_kind::prefix);
  REQUIRE(r.prefix);
  CHECK(r.line == 3 * b.g);
  // Applied on the engine's owner (here), it equals a cold prefill.
  auto fresh = make_engine(b.c);
  disk_service::apply(*r.prefix, fresh->cache_state());
  require_same_as_cold(*fresh, *cold, 3 * b.g);
  REQUIRE(b.log->writes.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK_FALSE(b.log->writes[i].failed);
    CHECK(b.log->writes[i].released_bytes == staged[i]);
  }
  CHECK(st.service->store().entries() == 3);
}

TEST_CASE("a drain is answered at once when idle, and after the write out is committed and durable",
          "[actors][disk]") {
  actor_bench b;
  auto d = b.spawn_disk();
  b.f.sched->run();
  auto p = b.spawn_probe(d);
  auto& st = b.state(d);

  caf::anon_send(p, drain_atom::value);
  b.f.sched->run();
  CHECK(b.log->order == std::vector<std::string>{"drain"});

  const auto t = test_tokens(2 * b.g + 3, 21);
  auto e = prefilled(b.c, t, 2 * b.g);
  caf::anon_send(p, disk_submit_atom::value, b.submission(*e, t));
  while (st.out.empty()) REQUIRE(b.f.sched->try_run_once());  // the job is at the writer now
  caf::anon_send(p, drain_atom::value);
  b.f.run_only(p);
  b.f.run_only(d);
  CHECK(st.drains.size() == 1);  // the disk has the drain and keeps it
  CHECK(b.log->order.size() == 1);

  std::size_t indexed_at_drain = 0, durable_at_drain = 0, tmp_at_drain = 99;
  b.log->at_drain = [&] {
    indexed_at_drain = st.service->store().entries();
    // Durable: a new process scanning the folder now finds it.
    disk_service later(b.env, b.layout, b.clock, b.options());
    later.start();
    durable_at_drain = later.store().entries();
    tmp_at_drain = tmp_files_under(b.dir.str()).size();
  };
  b.f.sched->run();
  CHECK(b.log->order == std::vector<std::string>{"drain", "write", "drain"});
  CHECK(indexed_at_drain == 1);
  CHECK(durable_at_drain == 1);
  CHECK(tmp_at_drain == 0);
  CHECK(b.log->stats.back().writes_out == 0);
  CHECK(st.drains.empty());
}

TEST_CASE("a disk writer that goes away releases its jobs and another takes over", "[actors][disk]") {
  actor_bench b;
  auto d = b.spawn_disk();
  b.f.sched->run();
  auto p = b.spawn_probe(d);
  auto& st = b.state(d);
  const auto t = test_tokens(2 * b.g + 3, 31);
  auto e = prefilled(b.c, t, 2 * b.g);
  auto s = b.submission(*e, t);
  const std::uint64_t staged = s->staged_bytes;
  caf::anon_send(p, disk_submit_atom::value, s);
  while (st.out.empty()) REQUIRE(b.f.sched->try_run_once());
  const disk_writer_actor old = st.writer;
  caf::anon_send(p, drain_atom::value);
  // It dies with the job still in its mailbox: the exit sent at high priority passes the job.
  caf::anon_send<caf::message_priority::high>(
      caf::actor_cast<caf::actor>(old), caf::exit_msg{caf::actor_addr{}, caf::exit_reason::user_shutdown});
  b.f.sched->run();

  REQUIRE(b.log->writes.size() == 1);
  const disk_write_reply& w = b.log->writes[0];
  CHECK(w.failed);
  CHECK(w.released_bytes == staged);  // the board gets its staging back
  CHECK_FALSE(w.error.empty());
  CHECK(b.log->order == std::vector<std::string>{"write", "drain"});  // the drain did not hang
  // The planned files are indexed nowhere and none was written.
  CHECK(st.service->store().entries() == 0);
  CHECK(st.service->store().chunk_count() == 0);
  CHECK(count_files(b.dir.str()) == 0);
  CHECK(st.out.empty());
  CHECK(st.writers_lost == 1);
  CHECK(st.writer != old);

  // The next write goes through the new writer, the same files planned again (marks released).
  caf::anon_send(p, disk_submit_atom::value, b.submission(*e, t));
  b.f.sched->run();
  REQUIRE(b.log->writes.size() == 2);
  CHECK_FALSE(b.log->writes[1].failed);
  CHECK(b.log->writes[1].files_written == 3);
  CHECK(st.service->store().entries() == 1);
}

TEST_CASE("the disk actor's stats and clear are typed, and a clear fails an older offer's read",
          "[actors][disk]") {
  actor_bench b;
  const auto head = test_tokens(4 * b.g + 5);
  auto [d, p] = b.started_over(head);

  disk_offer_request oq;
  oq.prompt.assign(head.begin(), head.end());
  caf::anon_send(p, disk_offer_atom::value, oq);
  caf::anon_send(p, stats_atom::value);
  b.f.sched->run();
  REQUIRE(b.log->offers.size() == 1);
  REQUIRE(b.log->offers[0].offer);
  REQUIRE(b.log->stats.size() == 1);
  const disk_stats before = b.log->stats[0];
  CHECK(before.entries == 1);
  CHECK(before.chunks == 3);
  CHECK(before.bytes > 0);
  CHECK(before.folder == b.folder());

  caf::anon_send(p, clear_atom::value);
  b.f.sched->run();
  REQUIRE(b.log->clears.size() == 1);
  CHECK(b.log->clears[0].files_removed == 4);
  CHECK(b.log->clears[0].generation == before.generation + 1);

  disk_read_request rq;
  rq.prompt = oq.prompt;
  rq.offer = b.log->offers[0].offer;
  caf::anon_send(p, disk_read_atom::value, rq);
  caf::anon_send(p, stats_atom::value);
  b.f.sched->run();
  REQUIRE(b.log->reads.size() == 1);
  CHECK(b.log->reads[0].kind == disk_read_kind::none);
  CHECK_THAT(b.log->reads[0].error, Catch::Contains("cleared"));
  CHECK_FALSE(b.log->reads[0].prefix);
  const disk_stats after = b.log->stats.back();
  CHECK(after.entries == 0);
  CHECK(after.bytes == 0);
  CHECK(after.restore_failures == 1);
  CHECK(after.generation == before.generation + 1);
}

TEST_CASE("the disk actor tells its subscriber the stats after every change, before the reply",
          "[actors][disk]") {
  actor_bench b;
  const auto head = test_tokens(4 * b.g + 5);
  auto [d, p] = b.started_over(head);
  auto& st = b.state(d);

  // Subscribing: the stats at once (the scan's).
  caf::anon_send(d, stats_atom::value, caf::actor_cast<disk_stats_receiver>(p));
  b.f.sched->run();
  REQUIRE(b.log->order == std::vector<std::string>{"published"});
  CHECK(b.log->published[0].entries == 1);

  // A write: published when handed to the writer, and again, committed, before its reply.
  const auto t = test_tokens(2 * b.g + 3, 41);
  auto e = prefilled(b.c, t, 2 * b.g);
  caf::anon_send(p, disk_submit_atom::value, b.submission(*e, t));
  b.f.sched->run();
  CHECK(b.log->order == std::vector<std::string>{"published", "published", "published", "write"});
  REQUIRE(b.log->published.size() == 3);
  CHECK(b.log->published[1].writes_out == 1);
  CHECK(b.log->published[1].entries == 1);
  CHECK(b.log->published[2].writes_out == 0);
  CHECK(b.log->published[2].entries == 2);
  CHECK(b.log->published[2].files_written == static_cast<long>(b.log->writes[0].files_written));

  // An offer, then a clear: each published before its reply.
  disk_offer_request oq;
  oq.prompt.assign(head.begin(), head.end());
  caf::anon_send(p, disk_offer_atom::value, oq);
  b.f.sched->run();
  caf::anon_send(p, clear_atom::value);
  b.f.sched->run();
  CHECK(b.log->order == std::vector<std::string>{"published", "published", "published", "write", "published",
                                                 "offer", "published", "clear"});
  REQUIRE(b.log->published.size() == 5);
  CHECK(b.log->published[4].entries == 0);
  CHECK(b.log->published[4].generation == b.log->published[3].generation + 1);
  CHECK(st.service->store().entries() == 0);
}
