// The generation run over a slot without the slot around it (runtime/board/generation_run.hpp):
// its phases, its finished event and ledger entry, what the tiers, the suffix store and the
// response cache keep of it, and a cancel that came before it started.
#include <catch2/catch.hpp>

#include "runtime/board/continuation_run.hpp"
#include "runtime/board/generation_run.hpp"
#include "runtime/io/clock.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/run_driver.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// The disk's part answered by hand: the offer with `offer` (none by default), the admission
// of its writes with no lines; then the run stepped to its end.
driven drive_with_disk(run& r, board_events out, const disk_offer_reply& offer = {}) {
  for (;;) {
    if (out.disk_offer) {
      out = r.offered(offer);
    } else if (out.disk_plan) {
      out = r.planned(disk_write_lines{});
    } else {
      return drive(r, std::move(out));
    }
  }
}

}  // namespace

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

TEST_CASE("generation run: with a disk tier a client's request asks the disk for its offer before it plans",
          "[board][run][generation][disk]") {
  const model_config c = test_config("tiny", 1024);
  board_runner_options o = small_runner_options();
  o.disk = disk_tier_options{};  // the disk is asked through the events; no folder is read here
  slot_state slot(shared_engine(c), o);
  const auto prompt = test_tokens(static_cast<std::size_t>(2 * c.grid + 9), 613);

  generation_run first(slot, job_of(prompt, 4, "d1", "A"), steady_ns(), std::nullopt);
  board_events out = first.start();
  REQUIRE(out.disk_offer);
  CHECK(first.current_phase() == run::phase::restoring);  // nothing planned until the offer came
  CHECK(!out.step_again);
  CHECK(std::vector<token_id>(out.disk_offer->prompt.begin(), out.disk_offer->prompt.end()) == prompt);
  CHECK(out.disk_offer->prefill_tokens_per_s == 0);              // nothing measured yet
  CHECK(out.disk_offer->floor == 0);                             // nothing held yet
  CHECK(first.offered(disk_offer_reply{}).step_again == false);  // waits for its write admission
  CHECK(first.offered(disk_offer_reply{}).events.empty());       // a second answer is ignored
  const driven a = drive_with_disk(first, first.planned(disk_write_lines{}));
  REQUIRE(a.done);
  CHECK(a.done->source == cache_source::cold);

  // The next request's offer is asked at the rate the slot measured.
  REQUIRE(slot.tiers->prefill_tokens_per_s() > 0);
  auto longer = prompt;
  const auto more = test_tokens(40, 614);
  longer.insert(longer.end(), more.begin(), more.end());
  generation_run second(slot, job_of(longer, 4, "d2", "A"), steady_ns(), std::nullopt);
  out = second.start();
  REQUIRE(out.disk_offer);
  CHECK(out.disk_offer->prefill_tokens_per_s == slot.tiers->prefill_tokens_per_s());
  // The disk (and its remote level) is asked only for what starts deeper than the rows in place
  // resume it: here their grid anchor below the first prompt's end (the output is not in it).
  CHECK(out.disk_offer->floor == static_cast<std::size_t>(2 * c.grid));
  // A clear while the offer is asked for: the plan, made when the offer comes, sees it (a plan
  // made before asking would restore the cleared rows).
  for (cache_tier t : {cache_tier::resident, cache_tier::store}) second.cleared(slot.tiers->clear(t));
  const driven b = drive_with_disk(second, std::move(out));
  REQUIRE(b.done);
  CHECK(b.done->source == cache_source::cold);
  CHECK(b.done->prefilled == static_cast<long>(longer.size()));

  // A follow-up that continues the conversation: the floor is its end anchor, which serves it.
  auto follow = slot.tiers->resident().tokens();
  const auto turn = test_tokens(10, 616);
  follow.insert(follow.end(), turn.begin(), turn.end());
  generation_run third(slot, job_of(follow, 4, "d3", "A"), steady_ns(), std::nullopt);
  out = third.start();
  REQUIRE(out.disk_offer);
  REQUIRE(slot.tiers->resident().has_end_anchor());
  CHECK(out.disk_offer->floor == slot.tiers->resident().end_position());
  CHECK(out.disk_offer->floor > longer.size());
  const driven f = drive_with_disk(third, std::move(out));
  REQUIRE(f.done);
  CHECK(f.done->source == cache_source::end);

  // A continuation does not ask: its prompt is the held conversation and its turn.
  const auto rows = slot.tiers->resident().tokens();
  board_job sent = job_of(test_tokens(300, 615), 4, "compact", "A");
  compaction_plan plan;
  plan.turn = {10, 20, 30};
  sent.client()->compaction = plan;
  continuation_run cont(slot, continuation_job(sent, rows, slot.capacity()), steady_ns(), true);
  out = cont.start();
  CHECK(!out.disk_offer);
  CHECK(drive_with_disk(cont, std::move(out)).done);
}
