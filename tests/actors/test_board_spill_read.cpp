// The board with the spill's reader and writer actors on CAF's deterministic scheduler (issue 23):
// a request that resumes from a spilled conversation waits in the restoring phase while the
// spill reader reads and verifies it on its own thread; meanwhile the board goes on with the
// other slot's decode steps (no NVMe read runs on the board's thread, invariant 4). The read
// comes back as a message, and the request resumes from the spill with the answer of a server
// that ran only that conversation.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "actors/board.hpp"
#include "actors/spill_reader.hpp"
#include "actors/spill_writer.hpp"
#include "runtime/io/uring_env.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/spill_board.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::vector<token_id> plus(std::vector<token_id> t, std::size_t n, std::uint64_t seed) {
  const auto more = test_tokens(n, seed);
  t.insert(t.end(), more.begin(), more.end());
  return t;
}

}  // namespace

TEST_CASE("while one slot's conversation is read back from the spill, another slot's decode steps go on",
          "[actors][board][spill]") {
  const model_config c = test_config("tiny", 1024);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  temp_dir dir("anchorage-board-spill-read");
  // An earlier board spilled conversation A when B evicted it.
  const auto a1 = test_tokens(3 * g + 11, 851);
  std::vector<token_id> a_rows;
  {
    auto k = keeper_on(dir.str(), shared_engine(c)->layout(), 2 * g);
    slot_board s({shared_engine(c)}, evicting_options(k));
    spill_driver w;
    board_run log;
    run_all(s, log, &w, s.start(job_of(a1, 6, "a1", "A")));
    a_rows = s.runner(0).tiers().resident().tokens();
    run_all(s, log, &w, s.start(job_of(test_tokens(2 * g + 9, 852), 6, "b1", "B")));
    REQUIRE(k->store().manifest_count() == 1);
  }
  const auto a2 = plus(a_rows, 17, 853);

  caf_fixture f;
  auto seen = std::make_shared<recorded>();
  caf::actor sink = f.spawn(recorder, seen);
  std::shared_ptr<engine> eng = shared_engine(c);
  auto keeper = keeper_on(dir.str(), eng->layout(), 2 * g);
  REQUIRE(keeper->store().manifest_count() == 1);
  spill_reader_actor reader = f.spawn(anchorage::spill_reader, std::make_shared<uring_env>());
  spill_writer_actor writer = f.spawn(anchorage::spill_writer, eng->layout(), std::make_shared<uring_env>());
  board_options bo;
  bo.decode_block = 1;
  bo.cache = evicting_options(keeper).cache;
  bo.slots = {shared_engine(c)};
  bo.spill = keeper;
  bo.spill_reader = reader;
  bo.spill_writer = writer;
  board_actor b = f.spawn(board, eng, bo, caf::actor_cast<done_receiver>(sink));
  f.sched->run();
  auto& st = caf_fixture::state_of<board_state>(b);
  auto job = [&](const std::vector<token_id>& prompt, long max_tokens, const std::string& id,
                 const std::string& session) {
    board_job j = job_of(prompt, max_tokens, id, session);
    j.sink = caf::actor_cast<sink_actor>(sink);
    return j;
  };

  // C decodes on one slot.
  caf::anon_send(b, run_atom::value, job(test_tokens(g + 3, 854), 40, "c1", "C"));
  for (int i = 0; i < 4; ++i) {
    REQUIRE(f.sched->prioritize(b));
    f.sched->run_once();
  }
  const std::size_t c_slot = *st.slots->slot_of("c1");
  // A's next turn on the other slot: the read goes to the spill reader.
  caf::anon_send(b, run_atom::value, job(a2, 8, "a2", "A"));
  f.run_only(b);  // the board alone: it handles the run, then C's steps, until C ends
  f.run_only(sink);
  const std::size_t a_slot = *st.slots->slot_of("a2");
  REQUIRE(a_slot != c_slot);
  CHECK(st.slots->runner(a_slot).current_phase() == board_runner::phase::restoring);
  // C decoded to its end while A's read waited at the reader: the board never read the spill.
  REQUIRE(seen->ledger.size() == 1);
  CHECK(seen->ledger[0].id == "c1");
  CHECK(seen->ledger[0].output_tokens == 40);
  CHECK(caf_fixture::state_of<spill_reader_state>(reader).reads == 0);
  CHECK(keeper->stats().store.reads == 0);

  // The reader reads; the board applies its verified bytes and A runs.
  f.run_only(reader);
  CHECK(caf_fixture::state_of<spill_reader_state>(reader).reads == 1);
  f.sched->run();
  REQUIRE(seen->ledger.size() == 2);
  CHECK(seen->ledger[1].id == "a2");
  CHECK(seen->ledger[1].source == cache_source::spill);
  CHECK(seen->ledger[1].resumed_at == static_cast<long>(a_rows.size()));
  std::string got;
  for (const auto& ev : seen->events)
    if (ev.id == "a2" && ev.what == stream_event::kind::finished) got = ev.output.content;

  // A server that ran only A.
  slot_board ref({shared_engine(c)}, small_runner_options());
  board_run rlog;
  run_all(ref, rlog, nullptr, ref.start(job_of(a1, 6, "a1", "A")));
  REQUIRE(ref.runner(0).tiers().resident().tokens() == a_rows);
  run_all(ref, rlog, nullptr, ref.start(job_of(a2, 8, "a2", "A")));
  CHECK(rlog.finished.at("a2").cache.source == cache_source::end);
  CHECK(got == rlog.finished.at("a2").output.content);
}
