// The spill race (issue 23): a conversation evicted by another session and asked for again while
// its spill is still being written is never served cold for that reason. The board holds the
// request until the write commits, then it resumes from the spill with the answer (and the state
// bytes) of a server that ran only that conversation. Requests that would not resume from the
// conversation in flight do not wait.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "runtime/board/slot_board.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/disk_fixture.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/spill_board.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

bool same(const snapshot& a, const snapshot& b) {
  return a.length == b.length && a.sections == b.sections && a.views == b.views;
}

// Steps every slot until none wants a step; the staged spills are kept in `held` (in flight: not
// written, not committed) instead of being written.
void run_holding(slot_board& b, board_run& log, std::vector<spill_job_ptr>& held, slot_events first) {
  auto take = [&](slot_events& s) {
    serve_spill_read(b, s);
    for (auto& ev : s.events.events)
      if (ev.what == stream_event::kind::finished) log.finished[ev.id] = ev;
    for (auto& j : s.events.spill_writes) held.push_back(std::move(j));
    s.events.spill_writes.clear();
  };
  take(first);
  while (b.wants_step())
    for (auto& s : b.step()) take(s);
}

std::vector<token_id> plus(std::vector<token_id> t, std::size_t n, std::uint64_t seed) {
  const auto more = test_tokens(n, seed);
  t.insert(t.end(), more.begin(), more.end());
  return t;
}

}  // namespace

TEST_CASE(
    "spill: a conversation asked for again while its eviction spill is in flight waits for the commit "
    "and resumes from the spill, bit for bit",
    "[spill][tiers][exact]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-inflight");
  auto k = keeper_on(dir.str(), shared_engine(c)->layout(), static_cast<std::size_t>(2 * c.grid));
  slot_board s({shared_engine(c)}, evicting_options(k));
  spill_driver w;
  board_run log;
  std::vector<spill_job_ptr> held;
  const auto a1 = test_tokens(static_cast<std::size_t>(3 * c.grid + 11), 831);
  run_all(s, log, &w, s.start(job_of(a1, 6, "a1", "A")));
  const auto a_rows = s.runner(0).tiers().resident().tokens();
  // B replaces A's rows: A's spill is staged and stays in flight.
  const auto b1 = test_tokens(static_cast<std::size_t>(2 * c.grid + 9), 833);
  run_holding(s, log, held, s.start(job_of(b1, 6, "b1", "B")));
  REQUIRE(held.size() == 1);
  REQUIRE(k->in_flight() == 1);
  CHECK(k->store().manifest_count() == 0);
  // A's next turn at once: held, nothing runs.
  const auto a2 = plus(a_rows, 19, 834);
  CHECK_FALSE(s.admit(job_of(a2, 8, "a2", "A")));
  CHECK(s.waiting() == 1);
  CHECK(s.idle_slots() == 0);
  CHECK_FALSE(s.wants_step());
  // The write commits: A starts and resumes from the spill at its end anchor.
  w.serve(*k, held);
  REQUIRE(w.reports.size() == 1);
  CHECK_FALSE(w.reports[0].failed);
  CHECK(k->in_flight() == 0);
  auto started = s.spill_committed();
  REQUIRE(started.size() == 1);
  CHECK(s.waiting() == 0);
  run_all(s, log, &w, std::move(started.front()));
  const stream_event& got = log.finished.at("a2");
  CHECK(got.cache.source == cache_source::spill);
  CHECK(got.cache.resumed_at == static_cast<long>(a_rows.size()));
  // A server that ran only A.
  slot_board ref({shared_engine(c)}, small_runner_options());
  board_run rlog;
  run_all(ref, rlog, nullptr, ref.start(job_of(a1, 6, "a1", "A")));
  REQUIRE(ref.runner(0).tiers().resident().tokens() == a_rows);
  run_all(ref, rlog, nullptr, ref.start(job_of(a2, 8, "a2", "A")));
  const stream_event& want = rlog.finished.at("a2");
  CHECK(want.cache.source == cache_source::end);
  CHECK(got.output.content == want.output.content);
  const std::size_t n = ref.runner(0).slot0().length();
  REQUIRE(s.runner(0).slot0().length() == n);
  CHECK(same(state_bytes(s.runner(0).slot0().cache_state(), n),
             state_bytes(ref.runner(0).slot0().cache_state(), n)));
}

TEST_CASE("spill: with a spill in flight, a request that would not resume from it starts at once",
          "[spill][tiers]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-inflight-other");
  auto k = keeper_on(dir.str(), shared_engine(c)->layout(), static_cast<std::size_t>(2 * c.grid));
  slot_board s({shared_engine(c), shared_engine(c)}, evicting_options(k));
  spill_driver w;
  board_run log;
  std::vector<spill_job_ptr> held;
  // A on one slot, B (nothing shared) on the other; C shares A's head, takes A's slot and evicts
  // A, whose spill stays in flight.
  const auto head = test_tokens(static_cast<std::size_t>(c.grid), 840);
  const auto a1 = plus(head, static_cast<std::size_t>(2 * c.grid + 5), 841);
  const auto b1 = test_tokens(static_cast<std::size_t>(3 * c.grid + 7), 842);
  const auto c1 = plus(head, static_cast<std::size_t>(2 * c.grid + 3), 843);
  run_all(s, log, &w, s.start(job_of(a1, 4, "a1", "A")));
  run_all(s, log, &w, s.start(job_of(b1, 4, "b1", "B")));
  run_holding(s, log, held, s.start(job_of(c1, 4, "c1", "C")));
  REQUIRE(held.size() == 1);
  REQUIRE(held[0]->image.manifest.session_key == "A");
  // C's next turn shares the head with A's spill in flight, but its own slot holds it deeper:
  // it starts at once.
  std::vector<token_id> next;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto& rows = s.runner(i).tiers().resident().tokens();
    if (rows.size() > c1.size() && std::equal(c1.begin(), c1.end(), rows.begin())) next = plus(rows, 11, 844);
  }
  REQUIRE_FALSE(next.empty());
  auto c_started = s.admit(job_of(next, 4, "c2", "C"));
  REQUIRE(c_started);
  run_holding(s, log, held, std::move(*c_started));
  CHECK(log.finished.at("c2").cache.source == cache_source::end);
  // A new session sharing only the head: it starts too.
  auto d_started = s.admit(job_of(plus(head, 40, 845), 4, "d1", "D"));
  REQUIRE(d_started);
  CHECK(s.waiting() == 0);
  run_holding(s, log, held, std::move(*d_started));
  CHECK(log.finished.count("d1") == 1);
  w.serve(*k, held);
}
