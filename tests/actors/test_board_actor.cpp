// The board and the conductor on CAF's deterministic scheduler: preemption comes from message
// order, one request runs at a time, in arrival order.
#include <catch2/catch.hpp>

#include "actors/board.hpp"
#include "actors/conductor.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A board with the default device tiers, no side slots and no disk, decoding n tokens a message.
board_options decode_block_of(int n) {
  board_options o;
  o.decode_block = n;
  return o;
}

board_job long_prefill_job(const caf::actor& sink, int chunks, int grid) {
  board_job j;
  j.id = "r1";
  j.route = request_kind::completion;
  const auto t = test_tokens(static_cast<std::size_t>(chunks * grid));
  j.prompt.assign(t.begin(), t.end());
  j.sampling.temperature = 0;
  j.sampling.max_tokens = 4;
  j.sink = caf::actor_cast<sink_actor>(sink);
  return j;
}

}  // namespace

TEST_CASE("a high-priority message sent during a long prefill is handled before the next chunk",
          "[actors][board]") {
  caf_fixture f;
  const model_config c = test_config("tiny", 1024);
  std::shared_ptr<engine> eng = make_engine(c);
  auto seen = std::make_shared<recorded>();
  auto sink = f.spawn(recorder, seen);
  auto b = f.spawn(board, eng, decode_block_of(1),
                   caf::actor_cast<done_receiver>(sink));  // the recorder stands in for the conductor too
  caf::anon_send(b, run_atom::value, long_prefill_job(sink, 10, c.grid));
  auto& st = caf_fixture::state_of<board_state>(b);
  while (st.steps < 3) REQUIRE(f.sched->try_run_once());
  REQUIRE(eng->length() == static_cast<std::size_t>(3 * c.grid));  // three chunks ran

  const bool high = GENERATE(true, false);
  INFO((high ? "high" : "normal") << " priority cancel");
  if (high)
    caf::anon_send<caf::message_priority::high>(b, cancel_atom::value, std::string("r1"));
  else
    caf::anon_send(b, cancel_atom::value, std::string("r1"));
  f.sched->run();

  REQUIRE(seen->ledger.size() == 1);
  CHECK(seen->ledger[0].finish_reason == run_finish::cancelled);
  CHECK(seen->ledger[0].output_tokens == 0);
  // At high priority the cancel passes the board's own next step: no fourth chunk ran. At
  // normal priority it queues behind that step, so one more chunk runs first.
  CHECK(eng->length() == static_cast<std::size_t>((high ? 3 : 4) * c.grid));
  REQUIRE(!seen->events.empty());
  CHECK(seen->events.back().what == stream_event::kind::finished);
  CHECK(seen->events.back().finish_reason == run_finish::cancelled);
}

TEST_CASE("the board streams progress, deltas and one finished event", "[actors][board]") {
  caf_fixture f;
  const model_config c = test_config("tiny", 1024);
  std::shared_ptr<engine> eng = make_engine(c);
  auto seen = std::make_shared<recorded>();
  auto sink = f.spawn(recorder, seen);
  auto b = f.spawn(board, eng, decode_block_of(2), caf::actor_cast<done_receiver>(sink));
  auto job = long_prefill_job(sink, 3, c.grid);
  job.sampling.max_tokens = 5;
  caf::anon_send(b, run_atom::value, job);
  f.sched->run();
  int progress = 0, finished = 0;
  std::string text;
  for (const auto& ev : seen->events) {
    progress += ev.what == stream_event::kind::progress;
    finished += ev.what == stream_event::kind::finished;
    for (const auto& d : ev.deltas) text += d.text;
  }
  CHECK(progress == 3);  // one per prefill chunk
  CHECK(finished == 1);
  REQUIRE(seen->events.back().what == stream_event::kind::finished);
  const auto& end = seen->events.back();
  CHECK(end.output.content == text);
  CHECK(end.usage.prompt_tokens == 3 * c.grid);
  CHECK(end.usage.completion_tokens == 5);
  CHECK(end.finish_reason == run_finish::length);
  CHECK(end.cache.source == cache_source::cold);
  CHECK(end.cache.prefilled_tokens == 3 * c.grid);
  REQUIRE(seen->ledger.size() == 1);
  CHECK(seen->ledger[0].prefilled == 3 * c.grid);
}

TEST_CASE("the conductor runs one request at a time in arrival order and bounds its queue",
          "[actors][conductor]") {
  caf_fixture f;
  const model_config c = test_config("tiny", 1024);
  std::shared_ptr<engine> eng = make_engine(c);
  conductor_options opts;
  opts.limits.ctx_size = c.ctx_size;
  opts.max_queue = 1;
  auto& sys = *f.sys;
  auto cond = f.spawn(conductor, opts, [&sys, eng](done_receiver self) {
    return sys.spawn(board, eng, decode_block_of(4), self);
  });
  auto seen = std::make_shared<recorded>();
  auto sink = f.spawn(recorder, seen);

  auto req = [](const std::string& prompt) {
    completion_request r;
    r.kind = request_kind::completion;
    r.prompt_text = prompt;
    r.temperature = 0;
    r.max_tokens = 3;
    return std::make_shared<const completion_request>(r);
  };
  for (const char* id : {"a", "b", "c"})
    caf::anon_send(
        cond, generate_atom::value,
        request_envelope{id, req(std::string(70, 'x') + id), 0, caf::actor_cast<sink_actor>(sink)});
  f.sched->run();

  std::vector<std::string> order;
  std::string refused;
  for (const auto& ev : seen->events) {
    if (ev.what == stream_event::kind::finished) order.push_back(ev.id);
    if (ev.what == stream_event::kind::failed) {
      refused = ev.id;
      CHECK(ev.error.status == 429);
    }
  }
  CHECK(order == std::vector<std::string>{"a", "b"});  // c found a running request and a full queue
  CHECK(refused == "c");
  // and the ledger has both, in order
  auto& cst = caf_fixture::state_of<conductor_state>(cond);
  REQUIRE(cst.queue->book().recent().size() == 2);
  CHECK(cst.queue->book().recent()[0].id == "a");
  CHECK(cst.queue->book().recent()[1].id == "b");
  CHECK(cst.queue->running() == 0);
}

TEST_CASE("a request cancelled while it waits never reaches the board", "[actors][conductor]") {
  caf_fixture f;
  const model_config c = test_config("tiny", 1024);
  std::shared_ptr<engine> eng = make_engine(c);
  conductor_options opts;
  opts.limits.ctx_size = c.ctx_size;
  auto& sys = *f.sys;
  auto cond = f.spawn(conductor, opts, [&sys, eng](done_receiver self) {
    return sys.spawn(board, eng, decode_block_of(4), self);
  });
  auto seen = std::make_shared<recorded>();
  auto sink = f.spawn(recorder, seen);
  completion_request r;
  r.prompt_text = std::string(100, 'y');
  r.temperature = 0;
  r.max_tokens = 2;
  auto p = std::make_shared<const completion_request>(r);
  caf::anon_send(cond, generate_atom::value,
                 request_envelope{"first", p, 0, caf::actor_cast<sink_actor>(sink)});
  caf::anon_send(cond, generate_atom::value,
                 request_envelope{"second", p, 0, caf::actor_cast<sink_actor>(sink)});
  // The edge cancels only after the conductor accepted the request; step until it waits.
  auto& cst = caf_fixture::state_of<conductor_state>(cond);
  while (!cst.queue || cst.queue->waiting() == 0) REQUIRE(f.sched->try_run_once());
  REQUIRE(cst.queue->front()->id == "second");
  caf::anon_send<caf::message_priority::high>(cond, cancel_atom::value, std::string("second"));
  f.sched->run();
  REQUIRE(cst.queue->book().recent().size() == 1);
  CHECK(cst.queue->book().recent()[0].id == "first");
  bool second_failed = false;
  for (const auto& ev : seen->events)
    if (ev.id == "second") second_failed = ev.what == stream_event::kind::failed;
  CHECK(second_failed);
}

TEST_CASE("a cancel that passes its run in the mailbox still cancels it", "[actors][board]") {
  // The conductor sends run at normal priority and a cancel at high priority: in the board's
  // mailbox the cancel can come first. The board keeps it and ends the job as soon as it runs.
  caf_fixture f;
  const model_config c = test_config("tiny", 1024);
  std::shared_ptr<engine> eng = make_engine(c);
  auto seen = std::make_shared<recorded>();
  auto sink = f.spawn(recorder, seen);
  auto b = f.spawn(board, eng, decode_block_of(1), caf::actor_cast<done_receiver>(sink));
  caf::anon_send(b, run_atom::value, long_prefill_job(sink, 4, c.grid));
  caf::anon_send<caf::message_priority::high>(b, cancel_atom::value, std::string("r1"));
  f.sched->run();
  REQUIRE(seen->ledger.size() == 1);
  CHECK(seen->ledger[0].finish_reason == run_finish::cancelled);
  CHECK(seen->ledger[0].prefilled == 0);
  CHECK(eng->length() == 0);
}

TEST_CASE(
    "the board reports its tiers' stats typed, before the first request, after each prefill chunk and "
    "after each request",
    "[actors][board]") {
  caf_fixture f;
  const model_config c = test_config("tiny", 1024);
  std::shared_ptr<engine> eng = make_engine(c);
  auto seen = std::make_shared<recorded>();
  auto sink = f.spawn(recorder, seen);
  auto b = f.spawn(board, eng, board_options{}, caf::actor_cast<done_receiver>(sink));
  f.sched->run();
  REQUIRE(seen->tiers.size() == 1);
  CHECK(seen->tiers[0].resident.anchors == 0);
  CHECK(seen->tiers[0].enabled);
  caf::anon_send(b, run_atom::value, long_prefill_job(sink, 3, c.grid));
  f.sched->run();
  // One after each prefill chunk (the slots' view follows the prefill; after the last one the
  // prefill is over), one at the end.
  REQUIRE(seen->tiers.size() == 5);
  for (std::size_t i = 1; i <= 3; ++i) {
    INFO("after chunk " << i);
    REQUIRE(seen->tiers[i].slots.size() == 1);
    const slot_stats& sl = seen->tiers[i].slots[0];
    CHECK(sl.prefill_total == (i < 3 ? 3 * c.grid : 0));
    CHECK(sl.prefill_done == (i < 3 ? static_cast<long>(i) * c.grid : 0));
  }
  const cache_stats& s = seen->tiers.back();
  CHECK(s.slots.at(0).prefill_total == 0);
  CHECK(s.resident.anchors == 3);  // one per line the cold prefill passed
  CHECK(s.resident.misses == 1);
  CHECK(s.resident.rows > static_cast<std::size_t>(3 * c.grid));
  const nlohmann::json j = s;  // the stats route's form
  CHECK(j["resident"]["anchors"] == 3);
  CHECK(j["disk"]["enabled"] == false);
}
