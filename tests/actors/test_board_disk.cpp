// The board with the disk tier's actor on CAF's deterministic scheduler: the disk read comes
// back as a message, so a cancel and a clear sent while the board restores are handled before
// the restore completes; a write goes out and comes back between two steps, the board never
// waiting for it.
#include <catch2/catch.hpp>

#include <memory>

#include "actors/board.hpp"
#include "actors/disk.hpp"
#include "runtime/io/uring_env.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

disk_tier_options disk_options(const std::string& dir) {
  disk_tier_options o;
  o.store.dir = dir;
  o.store.eviction.min_free_bytes = 0;
  o.admission.min_tokens = 64;
  return o;
}

board_runner_options runner_options() {
  board_runner_options o;
  o.decode_block = 1;
  o.cache.resident_bytes = 256ULL << 20;
  o.cache.store_bytes = 256ULL << 20;
  o.cache.store_entry_bytes = 128ULL << 20;
  return o;
}

// An earlier process served `head` twice (its device tiers emptied between): an anchor on disk.
void write_head_twice(const model_config& c, const std::string& dir, const std::vector<token_id>& head) {
  uring_env env;
  board_runner_options o = runner_options();
  o.disk = disk_options(dir);
  board_runner w(std::shared_ptr<engine>(make_engine(c).release()), o);
  disk_driver d(env, w.slot0().layout(), *o.disk);
  for (const char* id : {"w1", "w2"}) {
    board_job j = job_of(head, 2, id);
    run_to_end(w, w.start(j), &d);
    w.clear(cache_tier::resident);
    w.clear(cache_tier::store);
  }
  REQUIRE(d.service->store().entries() == 1);
}

struct board_bench {
  caf_fixture f;
  model_config c = test_config("tiny", 1024);
  temp_dir dir{"anchorage-board-disk"};
  std::shared_ptr<recorded> seen = std::make_shared<recorded>();
  caf::actor sink;
  disk_actor disk;
  board_actor b;

  void spawn() {
    sink = f.spawn(recorder, seen);
    disk_actor_options da;
    std::shared_ptr<engine> eng = make_engine(c);
    da.layout = eng->layout();
    da.tier = disk_options(dir.str());
    da.env = std::make_shared<uring_env>();
    da.writer_env = std::make_shared<uring_env>();
    disk = f.spawn(anchorage::disk, da);
    f.sched->run();  // the scan
    board_options bo;
    bo.decode_block = 1;
    bo.cache = runner_options().cache;
    bo.disk = da.tier;
    bo.disk_handle = disk;
    b = f.spawn(board, eng, bo, caf::actor_cast<done_receiver>(sink));
    f.sched->run();
  }
  // The disk's offer for `prompt`, as the board asks for it when the request starts.
  std::optional<disk_offer> offer_for(const std::vector<token_id>& prompt) {
    auto got = std::make_shared<std::optional<disk_offer>>();
    disk_offer_request rq;
    rq.prompt.assign(prompt.begin(), prompt.end());
    f.spawn(
        [got, rq](caf::event_based_actor* self, disk_actor d) -> caf::behavior {
          self->request(d, caf::infinite, disk_offer_atom::value, rq).then([got](disk_offer_reply& r) {
            *got = r.offer;
          });
          return {};
        },
        disk);
    f.sched->run();
    return *got;
  }
  board_job job(const std::vector<token_id>& prompt, long max_tokens) {
    board_job j = job_of(prompt, max_tokens);
    j.sink = caf::actor_cast<sink_actor>(sink);
    return j;
  }
  board_runner& runner() { return caf_fixture::state_of<board_state>(b).slots->runner(0); }
  disk_state& disk_st() { return caf_fixture::state_of<disk_state>(disk); }
};

}  // namespace

TEST_CASE("a cancel and a clear sent while the board restores from disk are handled before the restore",
          "[actors][board][disk]") {
  board_bench t;
  const std::size_t g = static_cast<std::size_t>(t.c.grid);
  const auto head = test_tokens(4 * g, 701);
  write_head_twice(t.c, t.dir.str(), head);
  t.spawn();
  REQUIRE(t.disk_st().scan.indexed == 5);
  auto prompt = head;
  const auto more = test_tokens(g + 1, 702);
  prompt.insert(prompt.end(), more.begin(), more.end());
  board_job j = t.job(prompt, 8);
  REQUIRE(t.offer_for(prompt));  // the disk offers the head

  caf::anon_send(t.b, run_atom::value, j);
  t.f.run_only(t.b);
  REQUIRE(t.runner().current_phase() == board_runner::phase::restoring);  // its offer asked for
  t.f.run_only(t.disk);
  t.f.run_only(t.b);
  // The read is out, at the disk; the board is restoring and still serves its mailbox.
  REQUIRE(t.runner().current_phase() == board_runner::phase::restoring);
  const std::size_t tiers_before = t.seen->tiers.size();
  caf::anon_send<caf::message_priority::high>(t.b, cancel_atom::value, std::string("r1"));
  caf::anon_send(t.b, clear_atom::value, cache_tier::store);
  t.f.run_only(t.b);
  t.f.run_only(t.sink);
  CHECK(t.runner().current_phase() == board_runner::phase::restoring);  // still waiting for the disk
  CHECK(t.seen->tiers.size() == tiers_before + 1);                      // the clear answered with stats
  CHECK(t.seen->ledger.empty());
  CHECK(t.disk_st().service->stats().hits == 0);  // the disk has not read yet

  t.f.sched->run();  // the disk reads; the board applies, then the cancel ends the request
  REQUIRE(t.seen->ledger.size() == 1);
  CHECK(t.seen->ledger[0].finish_reason == run_finish::cancelled);
  CHECK(t.seen->ledger[0].source == cache_source::disk);  // the verified bytes were applied
  CHECK(t.seen->ledger[0].output_tokens == 0);
  CHECK(t.disk_st().service->stats().hits == 1);
}

TEST_CASE("a staged write goes out and comes back between two board steps, the board never waits",
          "[actors][board][disk]") {
  board_bench t;
  t.spawn();
  const std::size_t g = static_cast<std::size_t>(t.c.grid);
  const auto prompt = test_tokens(3 * g + 5, 703);
  caf::anon_send(t.b, run_atom::value, t.job(prompt, 24));
  auto& st = caf_fixture::state_of<board_state>(t.b);
  // The board alone: the disk's offer is asked, then nothing moves until the disk answers.
  t.f.run_only(t.b);
  REQUIRE(t.runner().current_phase() == board_runner::phase::restoring);
  t.f.run_only(t.disk);
  // The board alone: its admission is asked, then nothing moves until the disk answers.
  t.f.run_only(t.b);
  REQUIRE(t.runner().current_phase() == board_runner::phase::planning);
  t.f.run_only(t.disk);
  // The board alone again: it prefills, stages, submits, and keeps decoding.
  while (t.runner().stats().disk_staging->submissions == 0) {
    REQUIRE(t.f.sched->prioritize(t.b));
    t.f.sched->run_once();
  }
  const long steps_at_submit = st.steps;
  REQUIRE(t.runner().stats().disk_staged_bytes > 0);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(t.f.sched->prioritize(t.b));
    t.f.sched->run_once();
  }
  CHECK(st.steps == steps_at_submit + 3);  // three steps with the write still unplanned at the disk
  CHECK(t.runner().stats().disk_staged_bytes > 0);
  // The disk and its writer run; the reply waits in the board's mailbox behind its next step.
  t.f.run_only(t.disk);
  t.f.run_only(t.disk_st().writer);
  t.f.run_only(t.disk);
  REQUIRE(t.runner().current_phase() == board_runner::phase::running);
  REQUIRE(t.f.sched->prioritize(t.b));
  t.f.sched->run_once();  // a step or the reply, in mailbox order
  REQUIRE(t.f.sched->prioritize(t.b));
  t.f.sched->run_once();
  CHECK(t.runner().stats().disk_staged_bytes == 0);  // released between steps, mid-decode
  CHECK(t.runner().current_phase() == board_runner::phase::running);
  CHECK(t.disk_st().service->store().chunk_count() == 3);
  t.f.sched->run();
  REQUIRE(t.seen->ledger.size() == 1);
  CHECK(t.seen->ledger[0].finish_reason == run_finish::length);
}
