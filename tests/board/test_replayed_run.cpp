// The replayed run (runtime/board/replayed_run.hpp): an answer replayed without the engine, from
// the response cache or from a prewritten summary; ids that cannot be the job's output refuse.
#include <catch2/catch.hpp>

#include "runtime/board/generation_run.hpp"
#include "runtime/board/replayed_run.hpp"
#include "runtime/io/clock.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/run_driver.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("replayed run: the response cache's answer, replayed without reading the engine",
          "[board][run][replayed]") {
  const model_config c = test_config("tiny", 1024);
  slot_state slot(shared_engine(c), small_runner_options());
  const auto prompt = test_tokens(90, 621);
  generation_run live(slot, job_of(prompt, 7, "live"), steady_ns(), std::nullopt);
  const driven want = drive(live, live.start());
  REQUIRE(want.finished());

  // The answer's ids, replayed on a slot whose engine holds nothing: it stays empty.
  slot_state other(shared_engine(c), small_runner_options());
  cached_response hit;
  hit.output = std::vector<token_id>(want.suffix_add->begin() + static_cast<long>(prompt.size()),
                                     want.suffix_add->end());
  hit.finish_reason = want.finished()->finish_reason;
  replayed_run r(other, job_of(prompt, 7, "again"), steady_ns(), hit);
  CHECK(r.replayed());
  CHECK(r.source() == cache_source::response);
  const driven got = drive(r, r.start());
  REQUIRE(got.finished());
  CHECK(got.text == want.text);
  CHECK(got.finished()->finish_reason == want.finished()->finish_reason);
  CHECK(got.finished()->cache.source == cache_source::response);
  CHECK(got.finished()->cache.resumed_at == static_cast<long>(prompt.size()));
  REQUIRE(got.done);
  CHECK(got.done->prefilled == 0);
  CHECK(got.done->source == cache_source::response);
  CHECK(other.eng->length() == 0);
  CHECK(!got.suffix_add);  // the suffix store gets nothing of a replay
  CHECK(other.tiers->resident().end() == nullptr);
}

TEST_CASE("replayed run: a prewritten summary answers with its ids, cut at the request's max_tokens",
          "[board][run][replayed][compaction]") {
  const model_config c = test_config("tiny", 1024);
  slot_state slot(shared_engine(c), small_runner_options());
  const auto prompt = test_tokens(60, 622);
  generation_run live(slot, job_of(prompt, 9, "live"), steady_ns(), std::nullopt);
  const driven full = drive(live, live.start());
  prewritten_summary s;
  s.output.assign(full.suffix_add->begin() + static_cast<long>(prompt.size()), full.suffix_add->end());
  s.finish_reason = run_finish::stop;
  s.seed = 0;
  REQUIRE(s.output.size() == 9);
  replayed_run r(slot, job_of(prompt, 4, "summary"), steady_ns(), s);
  const driven got = drive(r, r.start());
  REQUIRE(got.finished());
  CHECK(got.finished()->cache.via == cache_via::prewritten);
  CHECK(got.finished()->cache.source == cache_source::end);
  CHECK(got.finished()->finish_reason == run_finish::length);  // the summary did not fit in 4 tokens
  CHECK(got.finished()->usage.completion_tokens == 4);
}

TEST_CASE("replayed run: ids that cannot be the job's output refuse to replay", "[board][run][replayed]") {
  const model_config c = test_config("tiny", 1024);
  slot_state slot(shared_engine(c), small_runner_options());
  cached_response bad;
  bad.output = {1 << 30};
  bad.finish_reason = run_finish::length;
  CHECK_THROWS(replayed_run(slot, job_of(test_tokens(30, 623), 4), steady_ns(), bad));
}
