// The board's work without the actor: a job started and stepped to its end, cancelled inside
// its prefill, a failed disk restore falling back to the cold path, a generation resumed from
// its durable checkpoint.
#include <catch2/catch.hpp>

#include <memory>

#include "runtime/disk/disk_store.hpp"
#include "runtime/io/uring_env.hpp"
#include "runtime/board/board_runner.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/fault_env.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("a started job steps to one finished event with its ledger entry", "[tiers][runner]") {
  const model_config c = test_config("tiny", 1024);
  board_runner r(make_engine(c), small_runner_options());
  const auto prompt = test_tokens(static_cast<std::size_t>(3 * c.grid), 601);
  board_events first = r.start(job_of(prompt, 5));
  CHECK(first.step_again);
  CHECK(first.events.empty());
  CHECK_FALSE(first.done);
  CHECK(r.busy());
  const run_result res = run_to_end(r, std::move(first));
  CHECK_FALSE(r.busy());
  REQUIRE(res.done);
  int progress = 0, finished = 0;
  for (const auto& ev : res.events) {
    progress += ev.what == stream_event::kind::progress;
    finished += ev.what == stream_event::kind::finished;
  }
  CHECK(progress == 3);  // one per prefill chunk
  CHECK(finished == 1);
  REQUIRE(res.events.back().what == stream_event::kind::finished);
  const stream_event& end = res.events.back();
  CHECK(end.output.content == res.text);
  CHECK(end.finish_reason == run_finish::length);
  CHECK(end.usage.completion_tokens == 5);
  CHECK(end.cache.source == cache_source::cold);
  const ledger_entry& l = *res.done;
  CHECK(l.id == "r1");
  CHECK(l.route == request_kind::completion);
  CHECK(l.source == cache_source::cold);
  CHECK(l.prompt_tokens == 3 * c.grid);
  CHECK(l.prefilled == 3 * c.grid);
  CHECK(l.output_tokens == 5);
  CHECK(l.finish_reason == run_finish::length);
  CHECK(end.ledger.source == l.source);

  // The same prompt again resumes from the resident prefix with the same answer.
  const run_result again = run_to_end(r, r.start(job_of(prompt, 5, "r2")));
  REQUIRE(again.done);
  CHECK(again.done->source != cache_source::cold);
  CHECK(again.done->prefilled < l.prefilled);
  CHECK(again.text == res.text);
}

TEST_CASE("a long prefill's progress events carry the resume point and the time, and it logs every tenth",
          "[tiers][runner][progress]") {
  const model_config c = test_config("tiny", 16384);
  board_runner r(make_engine(c), small_runner_options());
  // 9,216 tokens: more than the 8,192 above which a prefill is logged, a whole number of grid lines.
  const std::size_t n = 9216;
  REQUIRE(n % static_cast<std::size_t>(c.grid) == 0);
  const auto prompt = test_tokens(n, 611);
  REQUIRE(static_cast<long>(prompt.size()) > run::progress_log_tokens);
  log_capture log;
  struct info_level {
    log_level was = current_log_level();
    info_level() { set_log_level(log_level::info); }
    ~info_level() { set_log_level(was); }
  } level;
  const run_result cold = run_to_end(r, r.start(job_of(prompt, 2)));
  REQUIRE(cold.done);
  std::vector<const stream_event*> progress;
  for (const auto& ev : cold.events)
    if (ev.what == stream_event::kind::progress) progress.push_back(&ev);
  REQUIRE(progress.size() == n / static_cast<std::size_t>(c.grid));  // one per prefill chunk
  for (std::size_t i = 0; i < progress.size(); ++i) {
    CHECK(progress[i]->cached_tokens == 0);
    CHECK(progress[i]->prompt_tokens == static_cast<long>(n));
    CHECK(progress[i]->done_tokens == static_cast<long>(i + 1) * c.grid);
    CHECK(progress[i]->elapsed_ms >= 0);
    if (i > 0) CHECK(progress[i]->elapsed_ms >= progress[i - 1]->elapsed_ms);
  }
  std::vector<std::string> lines;
  for (const auto& l : log.lines)
    if (l.find("prefill r1 on slot 0: ") != std::string::npos) lines.push_back(l);
  // One line as each tenth is passed, in order, the last at the whole prompt.
  REQUIRE(lines.size() == 10);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i]);
    CHECK(lines[i].find(": " + std::to_string(10 * (i + 1)) + "% (") != std::string::npos);
  }
  CHECK(lines.back().find(": 100% (9216 of 9216 tokens, from 0, ") != std::string::npos);

  // The same prompt and a little more resumes from the resident prefix: its progress says from
  // where, and a prefill that short is not logged.
  auto longer = prompt;
  longer.insert(longer.end(), {5, 6, 7});
  const std::size_t before = log.lines.size();
  const run_result warm = run_to_end(r, r.start(job_of(longer, 2, "r2")));
  REQUIRE(warm.done);
  REQUIRE(warm.done->resumed_at > 0);
  bool saw = false;
  for (const auto& ev : warm.events)
    if (ev.what == stream_event::kind::progress) {
      saw = true;
      CHECK(ev.cached_tokens == warm.done->resumed_at);
      CHECK(ev.done_tokens > ev.cached_tokens);
    }
  CHECK(saw);
  for (std::size_t i = before; i < log.lines.size(); ++i)
    CHECK(log.lines[i].find("prefill r2") == std::string::npos);
}

TEST_CASE("a cancel inside the prefill ends the request at its next step", "[tiers][runner]") {
  const model_config c = test_config("tiny", 1024);
  board_runner r(make_engine(c), small_runner_options());
  const auto prompt = test_tokens(static_cast<std::size_t>(6 * c.grid), 602);
  board_events out = r.start(job_of(prompt, 4));
  out = r.step();
  out = r.step();
  REQUIRE(out.step_again);
  r.cancel("r1");
  const run_result res = run_to_end(r, r.step());
  REQUIRE(res.done);
  CHECK(res.done->finish_reason == run_finish::cancelled);
  CHECK(res.done->output_tokens == 0);
  CHECK(res.steps == 0);  // the step after the cancel was the last
  CHECK(r.slot0().length() == static_cast<std::size_t>(2 * c.grid));  // no chunk ran after it
  CHECK_FALSE(r.busy());

  SECTION("a cancel that passed its job ends it as soon as it starts") {
    r.cancel("early");
    const run_result e = run_to_end(r, r.start(job_of(prompt, 4, "early")));
    REQUIRE(e.done);
    CHECK(e.done->finish_reason == run_finish::cancelled);
    CHECK(e.done->output_tokens == 0);
  }
}

TEST_CASE("a disk restore that fails falls back to the cold path with the same output",
          "[tiers][runner][disk]") {
  temp_dir dir("anchorage-board-runner");
  const model_config c = test_config("tiny", 1024);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  uring_env base;  // outlives every runner below
  auto env = std::make_shared<fault_env>(base);
  board_runner_options o = small_runner_options();
  disk_tier_options d = test_disk_options(dir.str());
  d.admission.min_tokens = 64;
  o.disk = d;
  const auto head = test_tokens(4 * g, 603);
  {
    // Served twice, the device tiers emptied between: the second pass admits an anchor on disk.
    board_runner w(make_engine(c), o);
    disk_driver wd(*env, w.slot0().layout(), d);
    board_job j1 = job_of(head, 2, "w1");
    run_to_end(w, w.start(j1), &wd);
    w.clear(cache_tier::resident);
    w.clear(cache_tier::store);
    board_job j2 = job_of(head, 2, "w2");
    run_to_end(w, w.start(j2), &wd);
    REQUIRE(wd.service->store().entries() >= 1);
  }
  auto prompt = head;
  const auto more = test_tokens(g + 1, 604);
  prompt.insert(prompt.end(), more.begin(), more.end());

  board_runner cold(make_engine(c), small_runner_options());
  const run_result ref = run_to_end(cold, cold.start(job_of(prompt, 6, "ref")));
  REQUIRE(ref.done);

  board_runner r(make_engine(c), o);
  disk_driver rd(*env, r.slot0().layout(), d);
  board_job j = job_of(prompt, 6);
  board_events started = r.start(j);
  CHECK(r.current_phase() == board_runner::phase::restoring);  // the run asked for the disk's offer
  REQUIRE(started.disk_offer);
  const disk_offer_reply offer = rd.offer(*started.disk_offer);
  REQUIRE(offer.offer);  // the offer the disk made for the request
  env->fail_reads(5);    // EIO: every read of the disk tier fails from here
  started = r.offered(offer);
  CHECK(r.current_phase() == board_runner::phase::restoring);
  REQUIRE(started.disk_read);
  const run_result res = run_to_end(r, std::move(started), &rd);
  env->heal();
  REQUIRE(res.done);
  CHECK(res.done->source == cache_source::cold);
  CHECK(res.done->prefilled == static_cast<long>(prompt.size()));
  CHECK(rd.service->stats().restore_failures == 1);
  CHECK(res.text == ref.text);
  CHECK(res.events.back().output.content == ref.events.back().output.content);
}

TEST_CASE("an identical request resumes a cut generation from its checkpoint",
          "[tiers][runner][checkpoint]") {
  temp_dir dir("anchorage-board-runner");
  const model_config c = test_config("tiny", 1024);
  uring_env env;  // outlives every runner below
  board_runner_options o = small_runner_options();
  o.decode_block = 1;
  disk_tier_options d = test_disk_options(dir.str());
  d.checkpoint_tokens = 8;
  o.disk = d;
  const auto prompt = test_tokens(static_cast<std::size_t>(2 * c.grid), 605);
  const long max_tokens = 40;

  board_runner ref(make_engine(c), small_runner_options());
  const run_result whole = run_to_end(ref, ref.start(job_of(prompt, max_tokens, "ref")));
  REQUIRE(whole.done);
  REQUIRE(whole.done->output_tokens == max_tokens);

  {
    board_runner a(make_engine(c), o);
    disk_driver ad(env, a.slot0().layout(), d);
    board_events out = a.start(job_of(prompt, max_tokens));
    // Prefill, then decode until two checkpoints were staged and written; then the client goes.
    run_result part = run_to_end(a, std::move(out), &ad, 2 + 20);
    REQUIRE_FALSE(part.done);
    a.cancel("r1");
    part = run_to_end(a, a.step(), &ad);
    REQUIRE(part.done);
    REQUIRE(part.done->finish_reason == run_finish::cancelled);
    REQUIRE(ad.service->stats().checkpoints >= 1);
  }
  board_runner b(make_engine(c), o);  // a restart on the same folder
  disk_driver bd(env, b.slot0().layout(), d);
  const run_result res = run_to_end(b, b.start(job_of(prompt, max_tokens, "again")), &bd);
  REQUIRE(res.done);
  CHECK(res.done->source == cache_source::checkpoint);
  CHECK(res.done->prefilled == 0);
  CHECK(res.events.back().cache.source == cache_source::checkpoint);
  CHECK(res.done->output_tokens == whole.done->output_tokens);
  CHECK(res.events.back().output.content == whole.events.back().output.content);
}
