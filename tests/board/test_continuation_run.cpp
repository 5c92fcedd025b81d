// The continuation run (runtime/board/continuation_run.hpp): where a compaction request
// continues, its job, and the run itself over a slot: it reads only its own turn above the end
// anchor, says `via` compaction, and leaves the conversation's rows, anchors and end anchor.
#include <catch2/catch.hpp>

#include "runtime/board/continuation_run.hpp"
#include "runtime/io/clock.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/run_driver.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// Two turns of session A on the slot; the resident tokens after them.
std::vector<token_id> converse(slot_state& slot, const model_config& c) {
  generation_run t1(slot,
                    job_of(test_tokens(static_cast<std::size_t>(2 * c.grid + 5), 931), 6, "t1", "header:A"),
                    steady_ns(), std::nullopt);
  drive(t1, t1.start());
  auto p2 = slot.tiers->resident().tokens();
  const auto more = test_tokens(13, 932);
  p2.insert(p2.end(), more.begin(), more.end());
  generation_run t2(slot, job_of(p2, 6, "t2", "header:A"), steady_ns(), std::nullopt);
  const driven d = drive(t2, t2.start());
  REQUIRE(d.done);
  REQUIRE(d.done->source == cache_source::end);
  return slot.tiers->resident().tokens();
}

board_job compaction_of(const std::vector<token_id>& rows, bool guard_holds) {
  const tokenizer tok;
  compaction_plan plan;
  plan.shape = "flattened";
  plan.turn = {10, 20, 30, 40, 50};
  const std::vector<token_id> line(rows.begin() + 7, rows.begin() + 30);
  plan.user_lines = {guard_holds ? tok.decode(line) : std::string("a line nobody wrote")};
  board_job j = job_of(test_tokens(300, 933), 4, "compact", "header:A");  // the request as sent
  j.client()->compaction = plan;
  return j;
}

}  // namespace

TEST_CASE("continuation run: above the end anchor, via compaction, the conversation left as it was",
          "[board][run][continuation][compaction]") {
  const model_config c = test_config("tiny", 1024);
  slot_state slot(shared_engine(c), small_runner_options());
  const auto rows = converse(slot, c);
  const resident_prefix& r = slot.tiers->resident();
  const std::size_t end = r.end_position();
  const auto anchors = r.anchors().positions().size();

  const board_job sent = compaction_of(rows, true);
  const auto choice = choose_continuation(slot, sent);
  REQUIRE(choice);
  CHECK(choice->in_place);
  CHECK(choice->end_rows.size() == end);
  CHECK(choice->turn == sent.compaction()->turn);
  const board_job j = continuation_job(sent, choice->end_rows, slot.capacity());
  CHECK(j.prompt.size() == end + sent.compaction()->turn.size());
  CHECK(j.rules.reasoning_budget == -1);

  continuation_run cont(slot, j, steady_ns(), true);
  const driven d = drive(cont, cont.start());
  REQUIRE(d.finished());
  CHECK(d.finished()->cache.via == cache_via::compaction);
  CHECK(d.finished()->cache.source == cache_source::end);
  CHECK(d.finished()->cache.resumed_at == static_cast<long>(end));
  CHECK(d.finished()->cache.prefilled_tokens == static_cast<long>(sent.compaction()->turn.size()));
  CHECK(r.tokens() == rows);
  CHECK(r.end_position() == end);
  CHECK(r.anchors().positions().size() == anchors);
  CHECK(d.suffix_add);  // its rows above the end anchor were read and written
}

TEST_CASE("continuation run: a guard that fails, or no conversation held, chooses none",
          "[board][run][continuation][compaction]") {
  const model_config c = test_config("tiny", 1024);
  slot_state slot(shared_engine(c), small_runner_options());
  CHECK(!choose_continuation(slot, compaction_of(test_tokens(64, 934), true)));  // nothing held
  const auto rows = converse(slot, c);
  CHECK(!choose_continuation(slot, compaction_of(rows, false)));
  board_job other = compaction_of(rows, true);
  other.session_key = "header:B";  // another named session's conversation is not continued
  CHECK(!choose_continuation(slot, other));
  CHECK(choose_continuation(slot, compaction_of(rows, true)));
}
