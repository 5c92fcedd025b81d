// The generation run over a slot without the slot around it (runtime/board/generation_run.hpp):
// its phases, its finished event and ledger entry, what the tiers, the suffix store and the
// response cache keep of it, and a cancel that came before it started.
#include <catch2/catch.hpp>

#include "runtime/board/generation_run.hpp"
#include "runtime/io/clock.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/run_driver.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("generation run: planned, restored and stepped to its end, and the tiers keep its end anchor",
          "[board][run][generation]") {
  const model_config c = test_config("tiny", 1024);
  slot_state slot(shared_engine(c), small_runner_options());
  const auto prompt = test_tokens(static_cast<std::size_t>(2 * c.grid + 9), 611);
  generation_run first(slot, job_of(prompt, 6, "g1", "A"), steady_ns(), std::nullopt);
  board_events out = first.start();
  CHECK(first.current_phase() == run::phase::running);  // no read to wait for
  CHECK(out.step_again);
  const driven a = drive(first, std::move(out));
  CHECK(first.ended());
  REQUIRE(a.done);
  CHECK(a.done->source == cache_source::cold);
  CHECK(a.done->prefilled == static_cast<long>(prompt.size()));
  CHECK(a.done->output_tokens == 6);
  REQUIRE(a.finished());
  CHECK(a.finished()->output.content == a.text);
  CHECK(a.tiers_changed);
  // The suffix store gets the prompt and the output; the slot's end anchor is this session's.
  REQUIRE(a.suffix_add);
  CHECK(a.suffix_add->size() == prompt.size() + 6);
  CHECK(slot.end_session == "A");
  REQUIRE(slot.tiers->resident().end() != nullptr);
  CHECK(slot.tiers->resident().end()->rows.size() >= prompt.size());
  CHECK(slot.counters.steps == a.steps);

  // The same prompt again resumes from the tiers with the same answer.
  generation_run second(slot, job_of(prompt, 6, "g2", "A"), steady_ns(), std::nullopt);
  const driven b = drive(second, second.start());
  REQUIRE(b.done);
  CHECK(b.done->source != cache_source::cold);
  CHECK(b.done->prefilled < a.done->prefilled);
  CHECK(b.text == a.text);
}

TEST_CASE("generation run: a cancel before its start ends it at its first step", "[board][run][generation]") {
  const model_config c = test_config("tiny", 1024);
  slot_state slot(shared_engine(c), small_runner_options());
  generation_run r(slot, job_of(test_tokens(static_cast<std::size_t>(3 * c.grid), 612), 6), steady_ns(),
                   std::nullopt);
  r.cancel();
  const driven d = drive(r, r.start());
  REQUIRE(d.done);
  CHECK(d.done->finish_reason == run_finish::cancelled);
  CHECK(d.done->output_tokens == 0);
  CHECK(d.steps == 1);
  CHECK(r.ended());
}

TEST_CASE("generation run: a determined request's answer is kept for the next identical one",
          "[board][run][generation][response]") {
  const model_config c = test_config("tiny", 1024);
  board_runner_options o = small_runner_options();
  o.cache.response_cache_bytes = 1 << 20;
  slot_state slot(shared_engine(c), o);
  REQUIRE(slot.responses);
  board_job j = job_of(test_tokens(70, 613), 5);
  j.client()->greedy = true;
  const auto key = response_key_of(j, slot.eng->layout().fingerprint);
  REQUIRE(key);
  generation_run r(slot, j, steady_ns(), key);
  const driven d = drive(r, r.start());
  REQUIRE(d.done);
  const auto hit = slot.responses->find(*key);
  REQUIRE(hit);
  CHECK(hit->finish_reason == run_finish::length);
  CHECK(hit->output.size() == 5);

  // A prompt longer than the context: failed at once with a 400, nothing kept.
  generation_run big(slot, job_of(test_tokens(2000, 614), 5, "big"), steady_ns(), std::nullopt);
  const board_events out = big.start();
  CHECK(big.ended());
  REQUIRE(out.events.size() == 1);
  CHECK(out.events[0].what == stream_event::kind::failed);
  CHECK(out.events[0].error.status == 400);
  REQUIRE(out.done);
  CHECK(out.done->finish_reason == run_finish::error);
}
