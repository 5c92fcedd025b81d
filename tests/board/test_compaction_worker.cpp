// The compaction worker's idle work on the board (issue 15, item 5), without actors: the
// continuation of the slot's conversation written ahead in scratch rows, one chunk or block per
// step; the conversation's rows, grid anchors and end anchor byte for byte as they were after a
// finished and after a preempted run; a compaction request of that session at that end anchor
// answered from the summary with nothing prefilled, and the same answer the continuation gives;
// never from a summary of an end the conversation has moved past, nor one its sampling forbids.
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

board_runner_options worker_options() {
  board_runner_options o = small_runner_options();
  o.prewrites = std::make_shared<compaction_prewrites>();
  return o;
}

stream_event run_job(board_runner& r, board_job j) {
  const run_result res = run_to_end(r, r.start(std::move(j)));
  REQUIRE(!res.events.empty());
  return res.events.back();
}

board_job opencode_job(const std::vector<token_id>& prompt, long max_tokens, const std::string& id) {
  board_job j = job_of(prompt, max_tokens, id, "header:ses_A");
  j.client()->opencode = true;
  return j;
}

// The conversation of two turns of an opencode session every board here holds.
std::vector<token_id> converse(board_runner& r, const model_config& c) {
  run_job(r, opencode_job(test_tokens(static_cast<std::size_t>(3 * c.grid + 5), 901), 6, "t1"));
  auto p2 = r.tiers().resident().tokens();
  const auto more = test_tokens(17, 902);
  p2.insert(p2.end(), more.begin(), more.end());
  REQUIRE(run_job(r, opencode_job(p2, 6, "t2")).cache.source == cache_source::end);
  return r.tiers().resident().tokens();
}

// The continuation the worker writes from (greedy here, so that answers compare), long enough
// to take a prefill chunk and several decode blocks.
compaction_plan the_plan(const model_config& c) {
  compaction_plan p;
  p.shape = "opencode-1.18.33";
  const auto t = test_tokens(static_cast<std::size_t>(c.grid + 9), 907);
  p.turn.assign(t.begin(), t.end());
  return p;
}

board_job worker_template(const model_config& c, long max_tokens) {
  board_job t = job_of({}, max_tokens, "", "");
  t.kind = idle_prewrite{the_plan(c)};
  return t;
}

// A compaction request of session A whose guard lines the rows hold.
board_job compaction_request(const model_config& c, const std::vector<token_id>& rows, long max_tokens,
                             const std::string& id) {
  const tokenizer tok;
  board_job j = opencode_job(test_tokens(400, 903), max_tokens, id);  // the request as sent
  j.client()->compaction = the_plan(c);
  j.compaction()->user_lines = {tok.decode(std::vector<token_id>(rows.begin() + 7, rows.begin() + 40)),
                                tok.decode(std::vector<token_id>(rows.end() - 20, rows.end() - 6))};
  return j;
}

struct idle_run {
  std::optional<idle_reply> reply;
  long steps = 0;
  bool events = false;  // a stream event or a ledger entry came out (it must not)
};

// Steps idle work until it ends, or until `stop_after` steps (then it is still running).
idle_run drive_idle(board_runner& r, board_events out, long stop_after = 1L << 30) {
  idle_run res;
  for (;;) {
    res.events = res.events || !out.events.empty() || out.done.has_value();
    if (out.idle) res.reply = out.idle;
    if (!out.step_again || res.steps >= stop_after) return res;
    ++res.steps;
    out = r.step();
  }
}

// What must not change: the conversation's tokens, anchors, end anchor and its rows' bytes.
struct held {
  std::vector<token_id> tokens;
  std::size_t end = 0, taint = 0;
  std::vector<std::size_t> anchors;
  snapshot rows;

  static held of(board_runner& r) {
    const resident_prefix& p = r.tiers().resident();
    held h;
    h.tokens = p.tokens();
    h.end = p.end_position();
    h.taint = p.taint();
    for (const auto& a : p.anchors().positions()) h.anchors.push_back(a.first);
    h.rows = state_bytes(r.slot0().cache_state(), h.end);
    return h;
  }
};

void check_unchanged(const held& before, board_runner& r) {
  const held after = held::of(r);
  CHECK(after.tokens == before.tokens);
  CHECK(after.end == before.end);
  CHECK(after.taint == before.taint);
  CHECK(after.anchors == before.anchors);
  CHECK(after.rows.views == before.rows.views);
}

// The next ordinary turn on `a` and on a board that never ran idle work: the same tokens, the
// same state bit for bit.
void check_next_turn(board_runner& a, const model_config& c, const std::vector<token_id>& rows) {
  board_runner ref(shared_engine(c), worker_options());
  REQUIRE(converse(ref, c) == rows);
  auto p3 = rows;
  const auto more = test_tokens(11, 904);
  p3.insert(p3.end(), more.begin(), more.end());
  const stream_event got = run_job(a, opencode_job(p3, 8, "t3"));
  const stream_event want = run_job(ref, opencode_job(p3, 8, "t3"));
  CHECK(got.cache.source == cache_source::end);
  CHECK(got.cache.resumed_at == static_cast<long>(rows.size()));
  CHECK(got.output.content == want.output.content);
  check_same_state(a.slot0(), ref.slot0());
}

}  // namespace

TEST_CASE("compaction worker: a finished run keeps the summary and leaves the conversation as it was",
          "[compaction][worker][tiers][exact]") {
  const model_config c = test_config("tiny", 1024);
  board_runner a(shared_engine(c), worker_options());
  const auto rows = converse(a, c);
  const held before = held::of(a);
  const board_job tmpl = worker_template(c, 9);
  REQUIRE(a.idle_candidate(tmpl, rows.size()));
  CHECK_FALSE(a.idle_candidate(tmpl, rows.size() + 1));  // --compaction-min-tokens

  const idle_run w = drive_idle(a, a.start_idle(tmpl));
  REQUIRE(w.reply);
  CHECK(w.reply->what == idle_reply::outcome::finished);
  CHECK(w.reply->session_key == "header:ses_A");
  CHECK(w.reply->end_tokens == rows.size());
  CHECK(w.reply->output_tokens > 0);
  // One prefill chunk per step (the turn is longer than a grid), then blocks of 2 tokens.
  CHECK(w.reply->steps >= 2 + (w.reply->output_tokens - 1) / 2);
  CHECK_FALSE(w.events);
  CHECK_FALSE(a.busy());
  CHECK(a.idle_finished() == 1);
  check_unchanged(before, a);
  CHECK_FALSE(a.idle_candidate(tmpl, 0));  // written: not again for this end

  // The compaction request at this end anchor: answered from the summary, nothing prefilled, with
  // the answer the continuation gives on a board that never ran the worker.
  const stream_event got = run_job(a, compaction_request(c, rows, 9, "compact"));
  CHECK(got.cache.via == cache_via::prewritten);
  CHECK(got.cache.source == cache_source::end);
  CHECK(got.cache.prefilled_tokens == 0);
  CHECK(got.usage.cached_tokens == got.usage.prompt_tokens);
  CHECK(got.usage.prompt_tokens == static_cast<long>(rows.size() + the_plan(c).turn.size()));
  CHECK(a.compactions_prewritten() == 1);
  board_runner ref(shared_engine(c), worker_options());
  REQUIRE(converse(ref, c) == rows);
  const stream_event want = run_job(ref, compaction_request(c, rows, 9, "compact"));
  CHECK(want.cache.via == cache_via::compaction);
  CHECK(want.cache.prefilled_tokens == static_cast<long>(the_plan(c).turn.size()));
  CHECK(got.output.content == want.output.content);
  CHECK(got.finish_reason == want.finish_reason);
  CHECK(got.usage.completion_tokens == want.usage.completion_tokens);
  // A shorter max_tokens is the summary's head, cut as the continuation would cut it.
  const stream_event shorter = run_job(a, compaction_request(c, rows, 3, "compact-3"));
  const stream_event shorter_ref = run_job(ref, compaction_request(c, rows, 3, "compact-3"));
  CHECK(shorter.cache.via == cache_via::prewritten);
  CHECK(shorter.output.content == shorter_ref.output.content);
  CHECK(shorter.finish_reason == run_finish::length);
  check_unchanged(before, a);
  check_next_turn(a, c, rows);
}

TEST_CASE("compaction worker: a preempted run leaves the conversation as it was and keeps nothing",
          "[compaction][worker][tiers][exact]") {
  const model_config c = test_config("tiny", 1024);
  const long stop_after = GENERATE(0L, 1L, 2L, 4L);
  INFO("preempted after " << stop_after << " steps");
  board_runner a(shared_engine(c), worker_options());
  const auto rows = converse(a, c);
  const held before = held::of(a);
  const board_job tmpl = worker_template(c, 16);
  const idle_run w = drive_idle(a, a.start_idle(tmpl), stop_after);
  REQUIRE_FALSE(w.reply);
  REQUIRE(a.running_idle());
  // A request arrives: the run stops now, between two steps, without touching the engine.
  const std::size_t length = a.active().length();
  const board_events p = a.preempt_idle();
  REQUIRE(p.idle);
  CHECK(p.idle->what == idle_reply::outcome::preempted);
  CHECK(p.idle->steps == stop_after);
  CHECK(p.events.empty());
  CHECK_FALSE(p.done);
  CHECK(a.active().length() == length);
  CHECK_FALSE(a.busy());
  CHECK(a.idle_preempted() == 1);
  check_unchanged(before, a);
  // Nothing kept: the next quiet spell starts over; a compaction now is a continuation.
  CHECK(a.idle_candidate(tmpl, 0));
  check_next_turn(a, c, rows);
}

TEST_CASE("compaction worker: a summary of an end the conversation moved past is never used",
          "[compaction][worker][tiers]") {
  const model_config c = test_config("tiny", 1024);
  board_runner a(shared_engine(c), worker_options());
  auto rows = converse(a, c);
  const board_job tmpl = worker_template(c, 9);
  REQUIRE(drive_idle(a, a.start_idle(tmpl)).reply->what == idle_reply::outcome::finished);
  // The conversation moves on: its end anchor is another one.
  auto p3 = rows;
  const auto more = test_tokens(11, 904);
  p3.insert(p3.end(), more.begin(), more.end());
  REQUIRE(run_job(a, opencode_job(p3, 6, "t3")).cache.source == cache_source::end);
  rows = a.tiers().resident().tokens();
  CHECK(a.idle_candidate(tmpl, 0));  // a new end: a new summary may be written
  const stream_event got = run_job(a, compaction_request(c, rows, 9, "compact"));
  CHECK(got.cache.via == cache_via::compaction);
  CHECK(got.cache.prefilled_tokens == static_cast<long>(the_plan(c).turn.size()));
  CHECK(a.compactions_prewritten() == 0);
  // Another named session's compaction with the same lines and turn is not this summary's
  // either, nor this conversation's continuation (compaction_session_fits): served as sent.
  REQUIRE(drive_idle(a, a.start_idle(tmpl)).reply->what == idle_reply::outcome::finished);
  board_job other = compaction_request(c, rows, 9, "other");
  other.session_key = "header:ses_B";
  CHECK(run_job(a, other).cache.via == cache_via::none);
  CHECK(a.compactions_prewritten() == 0);
  CHECK(a.compactions_as_sent() == 1);
}

TEST_CASE("compaction worker: the summary answers only a request whose sampling it honours",
          "[compaction][worker][tiers]") {
  const model_config c = test_config("tiny", 1024);
  board_runner a(shared_engine(c), worker_options());
  const auto rows = converse(a, c);
  REQUIRE(drive_idle(a, a.start_idle(worker_template(c, 9))).reply->what == idle_reply::outcome::finished);
  struct change {
    const char* what;
    void (*apply)(board_job&);
  };
  const change changes[] = {
      {"another temperature", [](board_job& j) { j.sampling.temperature = 0.7; }},
      {"another top_p", [](board_job& j) { j.sampling.top_p = 0.5; }},
      {"an explicit seed it was not written with",
       [](board_job& j) {
         j.sampling.seed = 12345;
         j.sampling.seed_explicit = true;
       }},
      {"a logit bias",
       [](board_job& j) {
         j.sampling.logit_bias = {{65, 2.0f}};
       }},
      {"a stop string", [](board_job& j) { j.rules.stop_strings = {"zz"}; }},
  };
  for (const change& ch : changes) {
    INFO(ch.what);
    board_job j = compaction_request(c, rows, 9, std::string("c-") + ch.what);
    ch.apply(j);
    CHECK(run_job(a, j).cache.via == cache_via::compaction);
  }
  // A summary cut by its own max_tokens answers no request that allows more; one that stopped
  // answers any that allows as much.
  const stream_event m = run_job(a, compaction_request(c, rows, 40, "more"));
  CHECK(m.cache.via == (m.usage.completion_tokens < 9 ? cache_via::prewritten : cache_via::compaction));
  // The same sampling (the seed it was written with, explicitly) is answered from it.
  board_job same = compaction_request(c, rows, 9, "same");
  same.sampling.seed_explicit = true;
  CHECK(run_job(a, same).cache.via == cache_via::prewritten);
}

TEST_CASE("compaction worker: only an opencode session's conversation is prewritten for",
          "[compaction][worker][tiers]") {
  const model_config c = test_config("tiny", 1024);
  board_runner a(shared_engine(c), worker_options());
  board_job t1 = job_of(test_tokens(static_cast<std::size_t>(4 * c.grid), 911), 6, "t1", "other");
  run_job(a, t1);
  const board_job tmpl = worker_template(c, 9);
  CHECK_FALSE(a.idle_candidate(tmpl, 0));
  // A guest of an opencode session (a title request) does not make the conversation opencode's.
  board_job title = opencode_job(test_tokens(20, 912), 4, "title");
  CHECK(run_job(a, title).cache.via == cache_via::stash);
  CHECK_FALSE(a.idle_candidate(tmpl, 0));
  // No template plan, no work; a busy slot, no work.
  run_job(a, opencode_job(test_tokens(static_cast<std::size_t>(2 * c.grid), 913), 6, "t2"));
  CHECK(a.idle_candidate(tmpl, 0));
  board_job no_plan = tmpl;
  no_plan.kind = client_request{};
  CHECK_FALSE(a.idle_candidate(no_plan, 0));
  a.start(opencode_job(test_tokens(static_cast<std::size_t>(2 * c.grid), 914), 6, "t3"));
  CHECK_FALSE(a.idle_candidate(tmpl, 0));
}
