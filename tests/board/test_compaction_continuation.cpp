// A compaction request served as the continuation of the slot's conversation (issue 15, item 4),
// through the board's work without actors: it resumes at the end anchor and reads only its own
// turn, the conversation's rows, grid anchors and end anchor stay byte for byte as they were,
// and the next ordinary turn gets what it gets on a board that never served the compaction.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "runtime/board/slot_board.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/disk_fixture.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

stream_event run_job(board_runner& r, board_job j) {
  const run_result res = run_to_end(r, r.start(std::move(j)));
  REQUIRE(!res.events.empty());
  return res.events.back();
}

// The conversation of two turns every board here holds.
std::vector<token_id> converse(board_runner& r, const model_config& c) {
  run_job(r, job_of(test_tokens(static_cast<std::size_t>(3 * c.grid + 5), 901), 6, "t1", "A"));
  auto p2 = r.tiers().resident().tokens();
  const auto more = test_tokens(17, 902);
  p2.insert(p2.end(), more.begin(), more.end());
  REQUIRE(run_job(r, job_of(p2, 6, "t2", "A")).cache.source == cache_source::end);
  return r.tiers().resident().tokens();
}

}  // namespace

TEST_CASE("compaction: a continuation leaves the conversation's rows and anchors as they were",
          "[compaction][tiers][exact]") {
  const model_config c = test_config("tiny", 1024);
  board_runner a(shared_engine(c), small_runner_options());
  const auto rows = converse(a, c);
  const resident_prefix& r = a.tiers().resident();
  REQUIRE(r.has_end_anchor());
  const std::size_t e = r.end_position();
  const auto anchors = r.anchors().positions();
  const snapshot before = state_bytes(a.slot0().cache_state(), e);
  const std::size_t taint = r.taint();

  // A compaction of session A whose user lines the rows hold (the byte tokenizer: a line is the
  // bytes of a stretch of the rows).
  const tokenizer tok;
  compaction_plan plan;
  plan.shape = "flattened";
  plan.turn = {10, 20, 30, 40, 50, 60, 70};
  plan.user_lines = {tok.decode(std::vector<token_id>(rows.begin() + 7, rows.begin() + 40)),
                     tok.decode(std::vector<token_id>(rows.end() - 20, rows.end() - 6))};
  board_job j = job_of(test_tokens(400, 903), 5, "compact", "A");  // the request as sent
  j.client()->compaction = plan;
  const stream_event done = run_job(a, j);
  CHECK(done.cache.via == cache_via::compaction);
  CHECK(done.cache.source == cache_source::end);
  CHECK(done.cache.resumed_at == static_cast<long>(e));
  CHECK(done.cache.prefilled_tokens == static_cast<long>(plan.turn.size()));
  CHECK(a.compactions_continued() == 1);
  // The conversation as it was: its tokens, taint, anchors, end anchor, and its rows' bytes.
  CHECK(r.tokens() == rows);
  CHECK(r.taint() == taint);
  CHECK(r.anchors().positions().size() == anchors.size());
  for (const auto& [pos, stamp] : anchors) CHECK(r.anchors().at(pos) != nullptr);
  CHECK(r.end_position() == e);
  const snapshot after = state_bytes(a.slot0().cache_state(), e);
  CHECK(after.views == before.views);

  // Its next turn: what a board that never served the compaction gives, bit for bit.
  board_runner ref(shared_engine(c), small_runner_options());
  REQUIRE(converse(ref, c) == rows);
  auto p3 = rows;
  const auto more = test_tokens(11, 904);
  p3.insert(p3.end(), more.begin(), more.end());
  const stream_event got = run_job(a, job_of(p3, 8, "t3", "A"));
  const stream_event want = run_job(ref, job_of(p3, 8, "t3", "A"));
  CHECK(got.cache.source == cache_source::end);
  CHECK(got.cache.resumed_at == static_cast<long>(e));
  CHECK(got.output.content == want.output.content);
  const std::size_t n = ref.slot0().length();
  REQUIRE(a.slot0().length() == n);
  const snapshot x = state_bytes(a.slot0().cache_state(), n), y = state_bytes(ref.slot0().cache_state(), n);
  CHECK(x.views == y.views);
  CHECK(x.sections == y.sections);
}

TEST_CASE("compaction: the guard failing, or no conversation held, serves the request as sent",
          "[compaction][tiers]") {
  const model_config c = test_config("tiny", 1024);
  board_runner a(shared_engine(c), small_runner_options());
  compaction_plan plan;
  plan.turn = {10, 20, 30};
  plan.user_lines = {"a line nobody said", "another"};
  const auto as_sent = test_tokens(300, 905);
  board_job j = job_of(as_sent, 4, "c1", "A");
  j.client()->compaction = plan;
  // Nothing held yet.
  stream_event done = run_job(a, j);
  CHECK(done.cache.via != cache_via::compaction);
  CHECK(done.cache.prefilled_tokens == static_cast<long>(as_sent.size()));
  converse(a, c);
  // Held, but its lines are not in the record.
  j.id = "c2";
  done = run_job(a, j);
  CHECK(done.cache.via != cache_via::compaction);
  CHECK(done.usage.prompt_tokens == static_cast<long>(as_sent.size()));
  CHECK(a.compactions_as_sent() == 2);
  CHECK(a.compactions_continued() == 0);
}
