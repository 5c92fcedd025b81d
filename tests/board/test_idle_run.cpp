// The idle run (runtime/board/idle_run.hpp): the compaction worker's prewrite over a slot. It
// tells no client anything, keeps the summary when it finishes, and a preempted one keeps
// nothing; either way the conversation stays as it was.
#include <catch2/catch.hpp>

#include "runtime/board/idle_run.hpp"
#include "runtime/io/clock.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/run_driver.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

board_runner_options with_prewrites() {
  board_runner_options o = small_runner_options();
  o.prewrites = std::make_shared<compaction_prewrites>();
  return o;
}

// One turn of session A; the rows up to its end anchor.
std::vector<token_id> converse(slot_state& slot, const model_config& c) {
  generation_run t(slot, job_of(test_tokens(static_cast<std::size_t>(2 * c.grid + 3), 941), 6, "t1", "A"),
                   steady_ns(), std::nullopt);
  drive(t, t.start());
  REQUIRE(slot.tiers->resident().end() != nullptr);
  // Nothing above the end anchor (what board_runner::idle_candidate asks of a slot).
  REQUIRE(slot.tiers->resident().tokens() == slot.tiers->resident().end()->rows);
  return slot.tiers->resident().end()->rows;
}

board_job idle_job(const model_config& c, slot_state& slot, const std::vector<token_id>& end_rows) {
  board_job t = job_of({}, 5, "idle-1", "A");
  compaction_plan p;
  p.shape = "opencode-1.18.33";
  const auto turn = test_tokens(static_cast<std::size_t>(c.grid + 4), 942);
  p.turn.assign(turn.begin(), turn.end());
  t.kind = idle_prewrite{p};
  return continuation_job(std::move(t), end_rows, slot.capacity());
}

}  // namespace

TEST_CASE("idle run: no events, its answer at the end, the summary kept", "[board][run][idle][compaction]") {
  const model_config c = test_config("tiny", 1024);
  slot_state slot(shared_engine(c), with_prewrites());
  const auto end_rows = converse(slot, c);
  const auto tokens = slot.tiers->resident().tokens();
  idle_run r(slot, idle_job(c, slot, end_rows), steady_ns(), end_rows);
  CHECK(r.idle());
  const driven d = drive(r, r.start());
  CHECK(d.events.empty());
  CHECK(!d.done);
  CHECK(!d.suffix_add);
  REQUIRE(d.idle);
  CHECK(d.idle->what == idle_reply::outcome::finished);
  CHECK(d.idle->end_tokens == end_rows.size());
  CHECK(d.idle->output_tokens == 5);
  CHECK(d.idle->steps == d.steps);
  CHECK(slot.counters.idle_finished == 1);
  CHECK(slot.opts.prewrites->size() == 1);
  CHECK(slot.opts.prewrites->has("A", end_rows, r.job().compaction()->turn));
  CHECK(slot.tiers->resident().tokens() == tokens);
  CHECK(slot.tiers->resident().end()->rows == end_rows);
}

TEST_CASE("idle run: preempted between two steps, it keeps nothing", "[board][run][idle][compaction]") {
  const model_config c = test_config("tiny", 1024);
  slot_state slot(shared_engine(c), with_prewrites());
  const auto end_rows = converse(slot, c);
  const auto tokens = slot.tiers->resident().tokens();
  idle_run r(slot, idle_job(c, slot, end_rows), steady_ns(), end_rows);
  board_events out = r.start();
  REQUIRE(out.step_again);
  out = r.step();
  REQUIRE(out.step_again);
  out = r.preempt();
  CHECK(r.ended());
  REQUIRE(out.idle);
  CHECK(out.idle->what == idle_reply::outcome::preempted);
  CHECK(out.events.empty());
  CHECK(slot.counters.idle_preempted == 1);
  CHECK(slot.opts.prewrites->size() == 0);
  CHECK(slot.tiers->resident().tokens() == tokens);
}
