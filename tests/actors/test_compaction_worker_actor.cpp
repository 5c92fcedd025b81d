// The compaction worker on CAF's deterministic scheduler (issue 15, item 5): idle work is below
// every request. A request that arrives while the board writes a summary ahead is served after at
// most one more chunk or block of it, and gets the tokens it gets from a board that never ran
// idle work. The worker asks only after --compaction-idle-s without a request (each one resets
// its timer), through the conductor, which hands the question to the board only when nothing
// runs or waits; the summary then answers the session's compaction request with nothing
// prefilled, and a preempted run starts over at the next quiet spell.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>

#include "actors/board.hpp"
#include "actors/conductor.hpp"
#include "runtime/compaction/opencode_compaction.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/disk_fixture.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

board_options one_token_blocks() {
  board_options o;
  o.decode_block = 1;
  return o;
}

board_job opencode_job(const std::vector<token_id>& prompt, long max_tokens, const std::string& id,
                       const caf::actor& sink) {
  board_job j = job_of(prompt, max_tokens, id, "header:ses_A");
  j.client()->opencode = true;
  j.sink = caf::actor_cast<sink_actor>(sink);
  return j;
}

const stream_event* finished(const recorded& r, const std::string& id) {
  for (const auto& ev : r.events)
    if (ev.id == id && ev.what == stream_event::kind::finished) return &ev;
  return nullptr;
}

// Two turns of session A on board `b`: what the board then holds.
std::vector<token_id> converse(caf_fixture& f, const board_actor& b, const caf::actor& sink,
                               const std::shared_ptr<recorded>& seen, const model_config& c) {
  const auto p1 = test_tokens(static_cast<std::size_t>(3 * c.grid + 5), 901);
  caf::anon_send(b, run_atom::value, opencode_job(p1, 6, "t1", sink));
  f.sched->run();
  const stream_event* e1 = finished(*seen, "t1");
  REQUIRE(e1);
  return p1;
}

// The third turn's prompt after `p1` and its answer's ids as the rows hold them.
std::vector<token_id> next_prompt(const board_state& st) {
  auto p = st.slots->runner(0).tiers().resident().tokens();
  const auto more = test_tokens(11, 904);
  p.insert(p.end(), more.begin(), more.end());
  return p;
}

// The worker's question, as the conductor hands it over: a continuation turn of `turn` tokens.
idle_request idle_question(std::size_t turn) {
  idle_request rq;
  rq.job = job_of({}, 40, "", "");
  compaction_plan plan;
  const auto t = test_tokens(turn, 907);
  plan.turn.assign(t.begin(), t.end());
  rq.job.kind = idle_prewrite{plan};
  rq.min_tokens = 1;
  return rq;
}

// Asks `b` for idle work from another actor; the answer lands in the optional when it comes.
std::shared_ptr<std::optional<idle_reply>> ask_idle(caf_fixture& f, const board_actor& b,
                                                    const idle_request& rq) {
  auto reply = std::make_shared<std::optional<idle_reply>>();
  f.spawn(
      [b, rq, reply](caf::event_based_actor* self, int) -> caf::behavior {
        self->request(b, caf::infinite, idle_atom::value, rq).then([reply](idle_reply& r) { *reply = r; });
        return {[](int) {}};
      },
      0);
  return reply;
}

// A board of one slot whose conductor and sink is a recorder, holding session A's conversation.
struct held_board {
  caf_fixture f;
  std::shared_ptr<recorded> seen = std::make_shared<recorded>();
  caf::actor sink;
  board_actor b;
  explicit held_board(const model_config& c) {
    sink = f.spawn(recorder, seen);
    b = f.spawn(board, std::shared_ptr<engine>(make_engine(c).release()), one_token_blocks(),
                caf::actor_cast<done_receiver>(sink));
    converse(f, b, sink, seen, c);
  }
  board_state& state() { return caf_fixture::state_of<board_state>(b); }
};

}  // namespace

TEST_CASE("compaction worker: a request during idle work is served after at most one chunk or block of it",
          "[actors][compaction][worker]") {
  const model_config c = test_config("tiny", 1024);
  // Idle steps that ran before the request arrives: inside the turn's prefill (2 chunks), at
  // its end, and several blocks into the summary's decode.
  const long ran = GENERATE(1L, 2L, 5L);
  INFO(ran << " idle steps ran before the request");
  held_board h(c);
  caf_fixture& f = h.f;
  auto& seen = h.seen;
  auto& sink = h.sink;
  auto& b = h.b;
  auto& st = h.state();
  const auto p3 = next_prompt(st);
  const std::size_t end = st.slots->runner(0).tiers().resident().end_position();
  const snapshot before_rows = state_bytes(st.slots->runner(0).slot0().cache_state(), end);
  const auto reply = ask_idle(f, b, idle_question(static_cast<std::size_t>(2 * c.grid - 3)));
  const long s0 = st.steps;
  while (st.steps < s0 + ran) REQUIRE(f.sched->try_run_once());
  REQUIRE(st.slots->idle_running());
  REQUIRE_FALSE(reply->has_value());

  // The request arrives; the board's own next step message is already in its mailbox.
  const std::size_t seen_before = seen->events.size();
  caf::anon_send(b, run_atom::value, opencode_job(p3, 8, "t3", sink));
  f.sched->run();
  REQUIRE(reply->has_value());
  CHECK((*reply)->what == idle_reply::outcome::preempted);
  CHECK((*reply)->steps >= ran);
  CHECK((*reply)->steps <= ran + 1);  // at most one chunk or block after the request came
  // Idle work told no client anything.
  for (std::size_t i = seen_before; i < seen->events.size(); ++i) CHECK(seen->events[i].id == "t3");
  for (std::size_t i = 0; i < seen_before; ++i) CHECK(seen->events[i].id == "t1");
  const stream_event* got = finished(*seen, "t3");
  REQUIRE(got);
  CHECK(got->cache.source == cache_source::end);
  CHECK(got->cache.resumed_at == static_cast<long>(end));
  CHECK(seen->ledger.size() == 2);  // t1 and t3: idle work has no ledger entry

  // The same turn on a board that never ran idle work: the same tokens, the same rows.
  held_board ref(c);
  caf::anon_send(ref.b, run_atom::value, opencode_job(p3, 8, "t3", ref.sink));
  ref.f.sched->run();
  const stream_event* want = finished(*ref.seen, "t3");
  REQUIRE(want);
  CHECK(got->output.content == want->output.content);
  CHECK(got->cache.prefilled_tokens == want->cache.prefilled_tokens);
  auto& rst = ref.state();
  const std::size_t n = rst.slots->runner(0).slot0().length();
  REQUIRE(st.slots->runner(0).slot0().length() == n);
  CHECK(state_bytes(st.slots->runner(0).slot0().cache_state(), end).views == before_rows.views);
  const snapshot x = state_bytes(st.slots->runner(0).slot0().cache_state(), n);
  const snapshot y = state_bytes(rst.slots->runner(0).slot0().cache_state(), n);
  CHECK(x.views == y.views);
  CHECK(x.sections == y.sections);
}

namespace {

// A chat request of opencode session ses_W (its id in the x-session-id header).
std::shared_ptr<const completion_request> chat(std::vector<chat_message> messages, long max_tokens) {
  completion_request r;
  r.kind = request_kind::chat;
  r.messages = std::move(messages);
  r.max_tokens = max_tokens;
  r.session_header = "ses_W";
  r.user_agent = "opencode/1.18.33 test";
  return std::make_shared<const completion_request>(r);
}

chat_message msg(const std::string& role, const std::string& content) {
  chat_message m;
  m.role = role;
  m.content = content;
  return m;
}

}  // namespace

TEST_CASE(
    "compaction worker: asks after the idle time without a request, and its summary answers the compaction",
    "[actors][compaction][worker]") {
  const model_config c = test_config("tiny", 4096);
  caf_fixture f;
  conductor_options opts;
  opts.limits.ctx_size = c.ctx_size;
  opts.compaction_max_tokens = 12;
  compaction_worker_options w;
  w.idle = std::chrono::seconds(30);
  w.min_tokens = 1;
  opts.worker = w;
  auto& sys = *f.sys;
  auto eng = std::shared_ptr<engine>(make_engine(c).release());
  board_actor b;
  auto cond = f.spawn(conductor, opts, [&sys, &b, eng](done_receiver d) {
    board_options bo;
    bo.decode_block = 2;
    b = sys.spawn(board, eng, bo, d);
    return b;
  });
  auto seen = std::make_shared<recorded>();
  auto sink = f.spawn(recorder, seen);
  f.sched->run();
  auto& cst = caf_fixture::state_of<conductor_state>(cond);
  REQUIRE(cst.worker);
  auto& wst = caf_fixture::state_of<compaction_worker_state>(cst.worker);
  REQUIRE(wst.tmpl);  // opencode 1.18.33's continuation, before any compaction request
  auto& bst = caf_fixture::state_of<board_state>(b);

  std::vector<chat_message> history = {msg("system", "You are opencode, a coding agent."),
                                       msg("user", "List the files in src and say which one is largest.")};
  auto send = [&](const std::string& id, std::shared_ptr<const completion_request> r) {
    caf::anon_send(cond, generate_atom::value,
                   request_envelope{id, std::move(r), 0, caf::actor_cast<sink_actor>(sink)});
    f.sched->run();
  };
  send("t1", chat(history, 6));
  const stream_event* t1 = finished(*seen, "t1");
  REQUIRE(t1);
  history.push_back(msg("assistant", t1->output.content));

  // 20 s, a request, 20 s more: never 30 s without one, so the worker has not asked.
  f.sched->advance_time(std::chrono::seconds(20));
  f.sched->run();
  history.push_back(msg("user", "Now read main.cpp."));
  send("t2", chat(history, 6));
  const stream_event* t2 = finished(*seen, "t2");
  REQUIRE(t2);
  REQUIRE(t2->cache.source == cache_source::end);
  history.push_back(msg("assistant", t2->output.content));
  f.sched->advance_time(std::chrono::seconds(20));
  f.sched->run();
  CHECK(wst.asked == 0);

  SECTION("the summary answers the session's compaction request with nothing prefilled") {
    f.sched->advance_time(std::chrono::seconds(10));
    f.sched->run();
    CHECK(wst.asked >= 1);
    CHECK(wst.finished == 1);
    CHECK(bst.slots->prewrites().size() == 1);

    // opencode's compaction request: its agent, the history flattened, its instructions.
    std::string t = "Here is the conversation so far:\n\n<conversation>\n";
    for (const auto& m : history) {
      if (m.role == "user") t += "[User]: " + nlohmann::json(m.content).dump() + "\n\n";
      if (m.role == "assistant") t += "[Assistant]: " + m.content + "\n\n";
    }
    t += "</conversation>\n\n" + opencode_compaction_instructions();
    send("compact", chat({msg("system", opencode_compaction_system_text()), msg("user", t)}, 12));
    const stream_event* got = finished(*seen, "compact");
    REQUIRE(got);
    CHECK(got->cache.via == cache_via::prewritten);
    CHECK(got->cache.prefilled_tokens == 0);
    CHECK(got->usage.completion_tokens > 0);
    CHECK(got->usage.cached_tokens == got->usage.prompt_tokens);
  }

  SECTION("a request during the run preempts it; the next quiet spell starts over") {
    f.sched->advance_time(std::chrono::seconds(10));
    // The question goes to the conductor, then the board; a few idle steps run.
    const long s0 = bst.steps;
    while (!bst.slots->idle_running() || bst.steps < s0 + 2) REQUIRE(f.sched->try_run_once());
    history.push_back(msg("user", "And the tests?"));
    // The test scheduler keeps running the actor it ran last while it has mail (the board and
    // its own step messages): the conductor is run first, as a real scheduler's other thread
    // would, so the request reaches the board between two of its steps.
    caf::anon_send(cond, generate_atom::value,
                   request_envelope{"t3", chat(history, 6), 0, caf::actor_cast<sink_actor>(sink)});
    REQUIRE(f.sched->prioritize(cond));
    f.sched->run_once();
    f.sched->run();
    CHECK(wst.preempted == 1);
    CHECK(wst.finished == 0);
    CHECK(bst.slots->prewrites().size() == 0);
    const stream_event* t3 = finished(*seen, "t3");
    REQUIRE(t3);
    CHECK(t3->cache.source == cache_source::end);
    f.sched->advance_time(std::chrono::seconds(30));
    f.sched->run();
    CHECK(wst.finished == 1);
    CHECK(bst.slots->prewrites().size() == 1);
  }
}

TEST_CASE("compaction worker: an admin hold (a clear, a planned stop's spill) stops idle work at once",
          "[actors][compaction][worker]") {
  const model_config c = test_config("tiny", 1024);
  const bool clear = GENERATE(true, false);
  INFO((clear ? "a clear" : "a planned stop's spill"));
  held_board h(c);
  caf_fixture& f = h.f;
  auto& b = h.b;
  auto& st = h.state();
  const auto reply = ask_idle(f, b, idle_question(static_cast<std::size_t>(c.grid + 5)));
  auto answered = std::make_shared<bool>(false);
  const long s0 = st.steps;
  while (st.steps < s0 + 3) REQUIRE(f.sched->try_run_once());
  REQUIRE(st.slots->idle_running());
  auto holder = f.spawn(
      [b, clear, answered](caf::event_based_actor* self, int) -> caf::behavior {
        if (clear)
          self->request(b, caf::infinite, clear_atom::value, cache_tier::store)
              .then([answered](clear_reply&) { *answered = true; });
        else
          self->request(b, caf::infinite, spill_atom::value).then([answered](spill_stop_reply&) {
            *answered = true;
          });
        return {[](int) {}};
      },
      0);
  // The test scheduler runs the board on while it has mail: the holder is run first, as another
  // thread of a real scheduler would, so its message reaches the board between two steps.
  f.sched->prioritize(holder);
  f.sched->run_once();
  f.sched->run();
  REQUIRE(reply->has_value());
  CHECK((*reply)->what == idle_reply::outcome::preempted);
  CHECK((*reply)->steps <= 4);
  CHECK(*answered);
  CHECK_FALSE(st.slots->idle_running());
  CHECK(st.slots->runner(0).idle_preempted() == 1);
}
