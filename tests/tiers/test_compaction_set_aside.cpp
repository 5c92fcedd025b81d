// A compaction request whose conversation is no longer in place (issue 15, item 2): parked by
// another session's request, or spilled because the park could not hold it. The board finds it
// there by its record (the guard), brings it back at its end anchor as its next turn would come
// back, and reads only the continuation's turn; the conversation's next ordinary turn then
// resumes at its end anchor with the tokens and the state of a board that never served the
// compaction.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "tests/support/disk_driver.hpp"
#include "tests/support/disk_fixture.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/spill_board.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::vector<token_id> grown(std::vector<token_id> t, std::size_t n, std::uint64_t seed) {
  const auto more = test_tokens(n, seed);
  t.insert(t.end(), more.begin(), more.end());
  return t;
}

// A's two turns, then B's request (no guest): A is set aside. A's rows as they were.
std::vector<token_id> a_then_b(slot_board& s, board_run& log, spill_driver* w, const model_config& c) {
  const auto a1 = test_tokens(static_cast<std::size_t>(3 * c.grid + 11), 821);
  run_all(s, log, w, s.start(job_of(a1, 6, "a1", "A")));
  run_all(s, log, w, s.start(job_of(grown(s.runner(0).tiers().resident().tokens(), 13, 822), 6, "a2", "A")));
  REQUIRE(log.finished.at("a2").cache.source == cache_source::end);
  const auto rows = s.runner(0).tiers().resident().tokens();
  run_all(s, log, w,
          s.start(job_of(test_tokens(static_cast<std::size_t>(2 * c.grid + 9), 823), 6, "b1", "B")));
  REQUIRE(s.runner(0).tiers().resident().tokens() != rows);
  return rows;
}

board_job compaction_of(const std::vector<token_id>& rows, const std::string& id) {
  const tokenizer tok;
  compaction_plan plan;
  plan.shape = "flattened";
  plan.turn = {10, 20, 30, 40, 50, 60, 70, 80, 90};
  plan.user_lines = {tok.decode(std::vector<token_id>(rows.begin() + 7, rows.begin() + 40)),
                     tok.decode(std::vector<token_id>(rows.end() - 20, rows.end() - 6))};
  board_job j = job_of(test_tokens(400, 903), 5, id, "A");  // the request as sent
  j.client()->compaction = plan;
  return j;
}

// A's next turn on `s` and on `ref`: the same answer, the same state bit for bit.
void check_next_turn(slot_board& s, board_run& log, spill_driver* w, slot_board& ref, board_run& rlog,
                     const std::vector<token_id>& rows) {
  const auto a3 = grown(rows, 19, 824);
  run_all(s, log, w, s.start(job_of(a3, 8, "a3", "A")));
  run_all(ref, rlog, nullptr, ref.start(job_of(a3, 8, "a3", "A")));
  const stream_event& got = log.finished.at("a3");
  CHECK(got.cache.source == cache_source::end);
  CHECK(got.cache.resumed_at == static_cast<long>(rows.size()));
  CHECK(got.output.content == rlog.finished.at("a3").output.content);
  check_same_state(s.runner(0).slot0(), ref.runner(0).slot0());
}

}  // namespace

TEST_CASE("compaction: a parked conversation is continued from the park, reading only the turn",
          "[compaction][tiers][exact]") {
  const model_config c = test_config("tiny", 1024);
  board_runner_options o = small_runner_options();
  o.cache.guest_max = 0;  // B is no guest: it parks A
  slot_board s({shared_engine(c)}, o);
  board_run log;
  const auto rows = a_then_b(s, log, nullptr, c);
  REQUIRE(s.runner(0).tiers().resident().saved(cache_via::park));

  run_all(s, log, nullptr, s.start(compaction_of(rows, "compact")));
  const stream_event& got = log.finished.at("compact");
  CHECK(got.cache.via == cache_via::compaction);
  CHECK(got.cache.resumed_at == static_cast<long>(rows.size()));
  CHECK(got.cache.prefilled_tokens == 9);
  CHECK(got.usage.prompt_tokens == static_cast<long>(rows.size() + 9));
  CHECK(s.runner(0).compactions_continued() == 1);
  // Its end anchor is the conversation's still.
  CHECK(s.runner(0).tiers().resident().end_position() == rows.size());

  slot_board ref({shared_engine(c)}, o);
  board_run rlog;
  REQUIRE(a_then_b(ref, rlog, nullptr, c) == rows);
  check_next_turn(s, log, nullptr, ref, rlog, rows);
}

TEST_CASE("compaction: a spilled conversation is continued from the spill, reading only the turn",
          "[compaction][tiers][spill][exact]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-compaction-spill");
  auto k = keeper_on(dir.str(), shared_engine(c)->layout(), static_cast<std::size_t>(2 * c.grid));
  slot_board s({shared_engine(c)}, evicting_options(k));
  spill_driver w;
  board_run log;
  const auto rows = a_then_b(s, log, &w, c);
  REQUIRE(k->store().manifest_count() == 1);

  run_all(s, log, &w, s.start(compaction_of(rows, "compact")));
  const stream_event& got = log.finished.at("compact");
  CHECK(got.cache.via == cache_via::compaction);
  CHECK(got.cache.source == cache_source::spill);
  CHECK(got.cache.resumed_at == static_cast<long>(rows.size()));
  CHECK(got.cache.prefilled_tokens == 9);
  CHECK(s.runner(0).tiers().resident().end_position() == rows.size());

  // A server that ran only A.
  slot_board ref({shared_engine(c)}, small_runner_options());
  board_run rlog;
  const auto a1 = test_tokens(static_cast<std::size_t>(3 * c.grid + 11), 821);
  run_all(ref, rlog, nullptr, ref.start(job_of(a1, 6, "a1", "A")));
  run_all(ref, rlog, nullptr,
          ref.start(job_of(grown(ref.runner(0).tiers().resident().tokens(), 13, 822), 6, "a2", "A")));
  REQUIRE(ref.runner(0).tiers().resident().tokens() == rows);
  check_next_turn(s, log, &w, ref, rlog, rows);

  // A guard that fails against every record: served as sent.
  board_job miss = compaction_of(rows, "miss");
  miss.compaction()->user_lines.front() = "a line this conversation never held";
  run_all(s, log, &w, s.start(miss));
  CHECK(log.finished.at("miss").cache.via != cache_via::compaction);
  CHECK(log.finished.at("miss").usage.prompt_tokens == 400);
}
