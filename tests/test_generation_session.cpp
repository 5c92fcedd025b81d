// One request on the engine, step by step: prefill chunks, decode blocks, stop strings, cancel.
#include <catch2/catch.hpp>

#include "runtime/generation_session.hpp"
#include "runtime/tokenizer.hpp"
#include "tests/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

generation_job greedy_job(std::vector<token_id> prompt, int max_tokens) {
  generation_job j;
  j.prompt = std::move(prompt);
  j.gen.max_tokens = max_tokens;
  return j;
}

std::string run_all(generation_session& s, int block, int* steps = nullptr) {
  std::string text;
  int n = 0;
  while (!s.done()) {
    for (const auto& d : s.step(block).deltas) text += d.text;
    ++n;
  }
  if (steps) *steps = n;
  return text;
}

}  // namespace

TEST_CASE("a session prefills a chunk per step, then decodes in blocks", "[session]") {
  const model_config c = test_config("tiny", 1024);
  auto e = make_engine(c);
  generation_session s(*e, greedy_job(test_tokens(2 * c.grid + 5), 10));
  CHECK(s.prefilling());
  auto r1 = s.step(4);
  CHECK(e->length() == static_cast<std::size_t>(c.grid));
  CHECK_FALSE(r1.prefill_finished);
  s.step(4);
  auto r3 = s.step(4);
  CHECK(r3.prefill_finished);
  CHECK(e->length() == static_cast<std::size_t>(2 * c.grid + 5));
  auto r4 = s.step(4);
  CHECK(r4.tokens == 4);
  int steps = 0;
  run_all(s, 4, &steps);
  CHECK(steps == 2);  // 4 + 2 more tokens
  CHECK(s.output_tokens() == 10);
  CHECK(s.finish_reason() == "length");
  CHECK(s.prefilled_tokens() == 2 * c.grid + 5);
}

TEST_CASE("a session's output is the generator's output, whatever the block size", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(50, 4);
  auto a = make_engine(c);
  a->prefill(prompt);
  generation_request r;
  r.max_tokens = 30;
  const auto want = generator(*a, r).run();
  for (int block : {1, 3, 64}) {
    auto e = make_engine(c);
    generation_session s(*e, greedy_job(prompt, 30));
    run_all(s, block);
    CHECK(s.output_ids() == want);
  }
}

TEST_CASE("stop strings cut the content and never reach the client", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(40, 6);
  // learn what the model says, then stop on a piece of it that spans several tokens
  auto probe = make_engine(c);
  generation_session free_run(*probe, greedy_job(prompt, 40));
  const std::string full = run_all(free_run, 8);
  REQUIRE(full.size() > 20);
  const std::string stop = full.substr(10, 3);
  const std::size_t first = full.find(stop);

  auto e = make_engine(c);
  auto job = greedy_job(prompt, 40);
  job.stop_strings = {"this will not appear", stop};
  generation_session s(*e, job);
  const std::string text = run_all(s, 1);
  CHECK(text == full.substr(0, first));
  CHECK(s.output().content == text);
  CHECK(s.finish_reason() == "stop");
  CHECK(s.output_tokens() < 40);
}

TEST_CASE("a cancelled session ends at its next step", "[session]") {
  const model_config c = test_config("tiny", 1024);
  auto e = make_engine(c);
  generation_session s(*e, greedy_job(test_tokens(5 * c.grid), 8));
  s.step(4);
  s.cancel();
  s.step(4);
  CHECK(s.done());
  CHECK(s.finish_reason() == "cancelled");
  CHECK(e->length() == static_cast<std::size_t>(c.grid));
  CHECK(s.output_tokens() == 0);
}

TEST_CASE("a stop token ends the session with reason stop", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(30, 9);
  auto probe = make_engine(c);
  generation_session free_run(*probe, greedy_job(prompt, 12));
  run_all(free_run, 4);
  const token_id third = free_run.output_ids().at(2);
  auto e = make_engine(c);
  auto job = greedy_job(prompt, 12);
  job.gen.stop_tokens = {third};
  generation_session s(*e, job);
  run_all(s, 4);
  CHECK(s.finish_reason() == "stop");
  // the stop token is not part of the output; the tokens before its first occurrence are
  const auto& full = free_run.output_ids();
  const auto at = std::find(full.begin(), full.end(), third) - full.begin();
  CHECK(s.output_tokens() == at);  // the stop token is neither emitted nor counted
  CHECK(s.output_ids() == std::vector<token_id>(full.begin(), full.begin() + at));
}
