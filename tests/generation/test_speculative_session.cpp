// Speculative decoding in the generation session (docs/SPECULATIVE.md): the greedy gate. With
// speculation on, every output must be the non-speculative output token for token, and the
// engine must end in the same state bit for bit, whatever the drafts were: accepted runs followed
// by zero-draft steps, drafts rejected at the first token, stop tokens, stop strings and
// max_tokens inside an accepted block, cancels, sampled generations, a checkpoint resume.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/generation/generation_session.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"
#include "tests/support/session_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A suffix store that drafts what the test scripts, from the reference run's output: round c
// drafts pattern[c % 6] of: the true continuation (short, long), nothing, a wrong first token,
// a true prefix then a wrong token, a continuation past the reference's end.
class scripted_source final : public lookup_source {
 public:
  scripted_source(std::vector<token_id> reference, std::function<std::size_t()> emitted, int vocab)
      : ref_(std::move(reference)), emitted_(std::move(emitted)), vocab_(vocab) {}

  std::vector<token_id> propose(const token_id*, std::size_t, std::size_t max_draft) override {
    const std::size_t at = emitted_();  // the next token the target emits is ref_[at]
    std::vector<token_id> out;
    auto truth = [&](std::size_t i) {
      return at + i < ref_.size() ? ref_[at + i] : (ref_.back() + 1) % vocab_;
    };
    auto wrong = [&](std::size_t i) { return (truth(i) + 1) % vocab_; };
    const int kind = calls_++ % 6;
    const std::size_t n = std::min<std::size_t>(max_draft, kind == 0 ? 2 : 9);
    for (std::size_t i = 0; i < n; ++i) {
      switch (kind) {
        case 0:
        case 1:
          out.push_back(truth(i));
          break;
        case 2:
          return {};
        case 3:
          out.push_back(i == 0 ? wrong(0) : truth(i));
          break;
        case 4:
          out.push_back(i == 3 ? wrong(i) : truth(i));
          break;
        default:
          out.push_back(truth(i));
          break;
      }
    }
    return out;
  }
  int calls() const { return calls_; }

 private:
  std::vector<token_id> ref_;
  std::function<std::size_t()> emitted_;
  int vocab_;
  int calls_ = 0;
};

struct run_result {
  std::vector<token_id> ids;
  assistant_output out;
  run_finish finish = run_finish::stop;
  snapshot state;
  speculative_counters counters;
};

run_result run_job(const model_config& c, generation_job job, int block = 4) {
  auto e = make_engine(c);
  generation_session s(*e, std::move(job));
  run_all(s, block);
  return {s.output_ids(), s.output(), s.finish_reason(), take_snapshot(e->cache_state()), s.speculation()};
}

// The job with speculation scripted against `reference` (the non-speculative run's ids).
run_result run_scripted(const model_config& c, generation_job job, const std::vector<token_id>& reference,
                        int block = 4, int draft_max = 8) {
  auto e = make_engine(c);
  generation_session* live = nullptr;
  scripted_source src(
      reference, [&] { return live->output_ids().size(); }, c.vocab);
  job.speculative.mode = speculative_mode::lookup;
  job.speculative.lookup_own = false;
  job.speculative.draft_max = draft_max;
  job.lookup = &src;
  generation_session s(*e, std::move(job));
  live = &s;
  run_all(s, block);
  return {s.output_ids(), s.output(), s.finish_reason(), take_snapshot(e->cache_state()), s.speculation()};
}

void require_same_run(const run_result& want, const run_result& got, const state_layout& layout) {
  CHECK(got.ids == want.ids);
  CHECK(got.out.content == want.out.content);
  CHECK(got.out.reasoning == want.out.reasoning);
  CHECK(got.finish == want.finish);
  require_same_state(want.state, got.state, layout);
}

const char* const presets[] = {"tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp"};

}  // namespace

TEST_CASE("greedy gate: scripted drafts of every kind leave the output and the state unchanged",
          "[speculative][session]") {
  for (const std::string preset : presets) {
    DYNAMIC_SECTION(preset) {
      const model_config c = test_config(preset, 1024);
      for (std::uint64_t p = 0; p < 6; ++p) {
        INFO("prompt " << p);
        const generation_job job = greedy_job(test_tokens(30 + 41 * p, 60 + p), 57);
        const run_result want = run_job(c, job);
        const run_result got = run_scripted(c, job, want.ids);
        require_same_run(want, got, make_engine(c)->layout());
        // Every kind of round happened: accepted drafts, rejected ones, zero-draft steps.
        CHECK(got.counters.rounds > 5);
        CHECK(got.counters.plain_steps > 0);
        CHECK(got.counters.store.accepted > 0);
        CHECK(got.counters.store.accepted < got.counters.store.drafted);
      }
    }
  }
}

TEST_CASE("greedy gate: a stop token, a stop string and max_tokens inside an accepted block",
          "[speculative][session]") {
  const model_config c = test_config("qwen35-tiny", 1024);
  const auto prompt = test_tokens(70, 71);
  const run_result free_run = run_job(c, greedy_job(prompt, 60));
  REQUIRE(free_run.ids.size() == 60);
  const auto layout = make_engine(c)->layout();
  SECTION("stop token") {
    generation_job job = greedy_job(prompt, 60);
    job.gen.stop_tokens = {free_run.ids[23]};
    const run_result want = run_job(c, job);
    CHECK(want.finish == run_finish::stop);
    require_same_run(want, run_scripted(c, job, free_run.ids), layout);
  }
  SECTION("stop string") {
    REQUIRE(free_run.out.content.size() > 20);
    generation_job job = greedy_job(prompt, 60);
    job.rules.stop_strings = {free_run.out.content.substr(14, 3)};
    const run_result want = run_job(c, job);
    CHECK(want.finish == run_finish::stop);
    require_same_run(want, run_scripted(c, job, free_run.ids), layout);
  }
  SECTION("max_tokens") {
    for (int max_tokens : {1, 2, 9, 31}) {
      INFO("max_tokens " << max_tokens);
      const generation_job job = greedy_job(prompt, max_tokens);
      const run_result want = run_job(c, job);
      require_same_run(want, run_scripted(c, job, free_run.ids, 4, 16), layout);
    }
  }
}

TEST_CASE("greedy gate: the lookup and MTP drafters on their own", "[speculative][session]") {
  for (const std::string preset : presets) {
    const model_config c = test_config(preset, 1024);
    for (const speculative_mode mode :
         {speculative_mode::lookup, speculative_mode::mtp, speculative_mode::mtp_lookup}) {
      if (mode != speculative_mode::lookup && !c.mtp) continue;
      DYNAMIC_SECTION(preset << " " << to_string(mode)) {
        // A prompt that repeats itself: a greedy random model soon loops, and lookup drafts land.
        std::vector<token_id> prompt = test_tokens(40, 81);
        prompt = concat(concat(prompt, prompt), prompt);
        const generation_job plain = greedy_job(prompt, 80);
        generation_job spec = plain;
        spec.speculative.mode = mode;
        const run_result want = run_job(c, plain);
        const run_result got = run_job(c, spec);
        require_same_run(want, got, make_engine(c)->layout());
        CHECK(got.counters.rounds > 0);
      }
    }
  }
}

TEST_CASE("sampled generations with speculation are the non-speculative draws, run to run",
          "[speculative][session]") {
  const model_config c = test_config("tiny-mtp", 1024);
  generation_job job = greedy_job(test_tokens(64, 91), 70);
  job.gen.sampling.temperature = 0.7f;
  job.gen.sampling.seed = 1234;
  const run_result want = run_job(c, job);
  const run_result got = run_scripted(c, job, want.ids);
  require_same_run(want, got, make_engine(c)->layout());
  require_same_run(got, run_scripted(c, job, want.ids), make_engine(c)->layout());
  generation_job mtp = job;
  mtp.speculative.mode = speculative_mode::mtp_lookup;
  require_same_run(want, run_job(c, mtp), make_engine(c)->layout());
}

TEST_CASE("a speculative generation resumed from a checkpoint emits the uninterrupted run's tokens",
          "[speculative][session][resume]") {
  const model_config c = test_config("qwen35-tiny-mtp", 1024);
  generation_job job = greedy_job(test_tokens(50, 95), 64);
  job.gen.sampling.temperature = 0.9f;
  job.gen.sampling.seed = 77;
  job.speculative.mode = speculative_mode::mtp_lookup;
  const run_result want = run_job(c, job);
  auto e = make_engine(c);
  std::vector<token_id> ids;
  snapshot at;
  {
    generation_session s(*e, job);
    while (s.output_ids().size() < 20 && !s.done()) s.step(4);
    REQUIRE(s.checkpointable());
    ids = s.output_ids();
    at = take_snapshot(e->cache_state());
  }
  auto resumed_engine = make_engine(c);
  restore_snapshot(resumed_engine->cache_state(), at);
  generation_job resume = job;
  resume.resume_output = ids;
  generation_session s(*resumed_engine, resume);
  run_all(s, 4);
  CHECK(s.output_ids() == want.ids);
  CHECK(s.finish_reason() == want.finish);
  require_same_state(want.state, take_snapshot(resumed_engine->cache_state()), resumed_engine->layout());
}

TEST_CASE("a cancelled speculative generation leaves the engine holding its prompt and every id but the last",
          "[speculative][session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(45, 97);
  const run_result want = run_job(c, greedy_job(prompt, 60));
  auto e = make_engine(c);
  generation_session* live = nullptr;
  scripted_source src(
      want.ids, [&] { return live->output_ids().size(); }, c.vocab);
  generation_job job = greedy_job(prompt, 60);
  job.speculative.mode = speculative_mode::lookup;
  job.speculative.lookup_own = false;
  job.lookup = &src;
  generation_session s(*e, job);
  live = &s;
  for (int i = 0; i < 6; ++i) s.step(4);
  s.cancel();
  s.step(4);
  CHECK(s.finish_reason() == run_finish::cancelled);
  const auto& ids = s.output_ids();
  REQUIRE(ids.size() > 6);
  CHECK(std::equal(ids.begin(), ids.end(), want.ids.begin()));
  CHECK(e->length() == prompt.size() + ids.size() - 1);
  // The next turn from there is the cold engine's: the state is the uninterrupted run's prefix.
  auto cold = make_engine(c);
  cold->prefill(prompt);
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) cold->decode(ids[i]);
  require_same_state(take_snapshot(cold->cache_state()), take_snapshot(e->cache_state()), e->layout());
}

TEST_CASE("the reasoning budget's close phrase is drafted whole and accepted", "[speculative][session]") {
  const model_config c = test_config("tiny", 1024);
  const generation_job plain = thinking_job(test_tokens(40, 99), 120, 10);
  generation_job spec = plain;
  spec.speculative.mode = speculative_mode::lookup;
  spec.speculative.draft_max = 16;
  const run_result want = run_job(c, plain);
  const run_result got = run_job(c, spec);
  require_same_run(want, got, make_engine(c)->layout());
  // Forced drafts are never rejected; a round of 16 drafts emits 17 tokens, so all but about one
  // token in 17 of the phrase came as accepted drafts.
  CHECK(got.counters.forced.drafted == got.counters.forced.accepted);
  CHECK(got.counters.forced.accepted >= close_phrase_ids().size() * 16 / 17 - 1);
}
