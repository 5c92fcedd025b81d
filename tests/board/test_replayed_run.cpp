// The replayed run (runtime/board/replayed_run.hpp): an answer replayed without the engine, from
// the response cache or from a prewritten summary; ids that cannot be the job's output refuse.
#include <catch2/catch.hpp>

#include "runtime/board/generation_run.hpp"
#include "runtime/board/replayed_run.hpp"
#include "runtime/io/clock.hpp"
#include "tests/support/board_images.hpp"
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

TEST_CASE("replayed run: an image's answer replays without encoding the image",
          "[board][run][replayed][images]") {
  const model_config c = test_config("qwen35-tiny", 1024);
  auto tower = tower_for(c);
  const image_prompt p =
      make_image_prompt(tower->config(), test_tokens(static_cast<std::size_t>(c.grid) + 1, 631),
                        test_tokens(9, 632), image_digest{0x81, 0x82}, 5);
  slot_state slot(shared_engine(c), with_tower(small_runner_options(), tower));
  generation_run live(slot, image_job(p, 6, "live", "A"), steady_ns(), std::nullopt);
  const driven want = drive(live, live.start());
  REQUIRE(want.finished());
  REQUIRE(tower->stats().encodes == 1);

  // The vision cache has lost the picture since; the replay neither reads nor encodes it.
  tower->clear();
  slot_state other(shared_engine(c), with_tower(small_runner_options(), tower));
  cached_response hit;
  hit.output = std::vector<token_id>(want.suffix_add->begin() + static_cast<long>(p.tokens.size()),
                                     want.suffix_add->end());
  hit.finish_reason = want.finished()->finish_reason;
  replayed_run r(other, image_job(p, 6, "again", "A"), steady_ns(), hit);
  const driven got = drive(r, r.start());
  REQUIRE(got.finished());
  CHECK(got.text == want.text);
  CHECK(got.finished()->cache.source == cache_source::response);
  CHECK(tower->stats().encodes == 1);
  CHECK(tower->stats().hits == 0);
  CHECK(other.eng->length() == 0);
}
