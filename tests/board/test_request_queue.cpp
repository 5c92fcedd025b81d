// The conductor's request queue without the actor: admission and the 429, the disk's offer a
// queued request waits for, cancels, the slots handed on in arrival order, and a drain's moves.
#include <catch2/catch.hpp>

#include <memory>

#include <nlohmann/json.hpp>

#include "runtime/board/request_queue.hpp"

using namespace anchorage;

namespace {

request_envelope envelope(const std::string& id, const std::string& text = "hello there") {
  completion_request r;
  r.kind = request_kind::completion;
  r.prompt_text = text;
  r.temperature = 0;
  r.max_tokens = 2;
  request_envelope env;
  env.id = id;
  env.request = std::make_shared<const completion_request>(r);
  return env;
}

request_queue_options options(int slots, int max_queue) {
  request_queue_options o;
  o.limits.ctx_size = 1024;
  o.slots = slots;
  o.max_queue = max_queue;
  return o;
}

ledger_entry ended(const std::string& id, run_finish reason = run_finish::length) {
  ledger_entry e;
  e.id = id;
  e.finish_reason = reason;
  return e;
}

std::vector<std::string> ids(const std::vector<board_job>& runs) {
  std::vector<std::string> out;
  for (const auto& j : runs) out.push_back(j.id);
  return out;
}

}  // namespace

TEST_CASE("the request queue hands the board one request per slot in arrival order", "[board][queue]") {
  request_queue q(options(2, 4), false, false);
  auto a = q.admit(envelope("a"));
  REQUIRE(a.events.size() == 1);
  CHECK(a.events[0].second.what == stream_event::kind::accepted);
  CHECK(a.events[0].second.prompt_tokens > 0);
  CHECK(ids(a.runs) == std::vector<std::string>{"a"});
  CHECK(ids(q.admit(envelope("b")).runs) == std::vector<std::string>{"b"});
  auto c = q.admit(envelope("c"));
  CHECK(c.runs.empty());  // both slots are busy: it waits
  CHECK(q.waiting() == 1);
  CHECK(q.running() == 2);
  CHECK(ids(q.finished(ended("b")).runs) == std::vector<std::string>{"c"});
  CHECK(q.finished(ended("a")).runs.empty());
  CHECK(q.running() == 1);
  CHECK(q.waiting() == 0);
}

TEST_CASE(
    "the request queue refuses with a 429 once max_queue requests wait, and a bad request with its error",
    "[board][queue]") {
  request_queue q(options(1, 1), false, false);
  q.admit(envelope("run"));
  q.admit(envelope("wait"));
  auto full = q.admit(envelope("full"));
  REQUIRE(full.events.size() == 1);
  CHECK(full.events[0].second.what == stream_event::kind::failed);
  CHECK(full.events[0].second.error.status == 429);
  CHECK(full.runs.empty());
  CHECK(q.waiting() == 1);
  CHECK(q.metrics_text().find("anchorage_rejected_total{status=\"429\"} 1") != std::string::npos);

  request_queue small(options(1, 4), false, false);
  auto too_long = small.admit(envelope("long", std::string(5000, 'x')));
  REQUIRE(too_long.events.size() == 1);
  CHECK(too_long.events[0].second.what == stream_event::kind::failed);
  CHECK(too_long.events[0].second.error.status == 400);
  CHECK(too_long.runs.empty());
  CHECK(small.waiting() == 0);
}

TEST_CASE("with a disk tier a request is handed to the board at once, the disk asked nothing here",
          "[board][queue]") {
  request_queue q(options(1, 4), true, false);
  auto a = q.admit(envelope("a"));
  REQUIRE(a.runs.size() == 1);  // the board's run asks the disk for its offer
  CHECK(a.runs[0].id == "a");
  // A second one waits for the slot, not for the disk.
  auto b = q.admit(envelope("b"));
  CHECK(b.runs.empty());
  CHECK(q.waiting() == 1);
  auto next = q.finished(ended("a"));
  REQUIRE(next.runs.size() == 1);
  CHECK(next.runs[0].id == "b");
}

TEST_CASE("a cancel ends a queued request at once and asks the board to cancel a running one",
          "[board][queue]") {
  request_queue q(options(1, 4), false, false);
  q.admit(envelope("a"));
  q.admit(envelope("b"));
  auto queued = q.cancel("b");
  REQUIRE(queued.events.size() == 1);
  CHECK(queued.events[0].second.what == stream_event::kind::failed);
  CHECK(!queued.cancel_running);
  auto running = q.cancel("a");
  CHECK(running.events.empty());
  REQUIRE(running.cancel_running);
  CHECK(*running.cancel_running == "a");
  CHECK(!q.cancel("nobody").cancel_running);
}

TEST_CASE("a drain waits for the queue and the staging, then spills once, then asks the disk",
          "[board][queue]") {
  using move = request_queue::drain_move;
  auto o = options(1, 4);
  o.spill = true;
  request_queue q(o, true, false);
  q.admit(envelope("a"));
  CHECK(q.next_drain() == move::wait);  // running
  cache_stats staged;
  staged.disk_staged_bytes = 4096;
  q.set_tiers(staged);
  q.finished(ended("a"));
  CHECK(q.next_drain() == move::wait);  // a staged write is not written yet
  q.set_tiers(cache_stats{});
  CHECK(q.next_drain() == move::ask_spill);
  CHECK(q.next_drain() == move::wait);  // the spill is out
  q.spill_done(spill_stop_reply{});
  CHECK(q.next_drain() == move::ask_disk);
  CHECK(q.next_drain() == move::wait);  // the disk's drain is out
  q.disk_drained(disk_stats{});
  CHECK(q.next_drain() == move::ask_disk);  // the spill is not asked twice

  request_queue plain(options(1, 4), false, false);
  CHECK(plain.next_drain() == move::idle);
}

TEST_CASE("a drain's progress names the step it waits on and what is left, in the stats", "[board][queue]") {
  auto o = options(1, 4);
  o.spill = true;
  request_queue q(o, true, false);
  auto step = [&] { return q.drain_progress()["step"].get<std::string>(); };
  auto stats_step = [&] { return nlohmann::json::parse(q.stats_text())["drain"]["step"].get<std::string>(); };
  q.admit(envelope("a"));
  q.admit(envelope("b"));
  CHECK(step() == "serving");  // nothing asked
  q.next_drain();
  CHECK(step() == "requests");
  CHECK(stats_step() == "requests");
  CHECK(q.drain_progress()["running"] == 1);
  CHECK(q.drain_progress()["waiting"] == 1);
  cache_stats staged;
  staged.disk_staged_bytes = 4096;
  q.set_tiers(staged);
  q.finished(ended("a"));
  q.finished(ended("b"));
  q.next_drain();
  CHECK(step() == "staged_writes");
  CHECK(q.drain_progress()["staged_bytes"] == 4096);
  CHECK(q.drain_progress()["running"] == 0);
  q.set_tiers(cache_stats{});
  REQUIRE(q.next_drain() == request_queue::drain_move::ask_spill);
  CHECK(step() == "spill");
  spill_stop_reply spilled;
  spilled.conversations = spilled.written = 1;
  spilled.bytes = 1 << 20;
  q.spill_done(spilled);
  REQUIRE(q.next_drain() == request_queue::drain_move::ask_disk);
  disk_stats writing;
  writing.writes_out = 2;
  q.set_disk(writing);
  CHECK(step() == "disk_writes");
  CHECK(q.drain_progress()["disk_writes_out"] == 2);
  CHECK(q.drain_progress()["spilled"]["written"] == 1);
  CHECK(q.drain_progress()["spilled"]["bytes"] == 1 << 20);
  q.disk_drained(disk_stats{});
  CHECK(step() == "done");
  CHECK(stats_step() == "done");
  CHECK(q.drain_progress()["disk_writes_out"] == 0);

  // Without a disk tier or a spill the drain is done once nothing runs.
  request_queue plain(options(1, 4), false, false);
  CHECK(plain.drain_progress()["step"] == "serving");
  CHECK(plain.next_drain() == request_queue::drain_move::idle);
  CHECK(plain.drain_progress()["step"] == "done");
}

TEST_CASE("the request queue's stats show the queue, the ledger and the requests", "[board][queue]") {
  request_queue q(options(1, 4), false, true);
  q.admit(envelope("a"));
  q.admit(envelope("b"));
  q.finished(ended("a"));
  q.finished(ended("b", run_finish::error));
  auto j = nlohmann::json::parse(q.stats_text());
  CHECK(j["queue"]["slots"] == 1);
  CHECK(j["queue"]["max_queue"] == 4);
  CHECK(j["queue"]["waiting"] == 0);
  CHECK(j["queue"]["running"] == 0);
  CHECK(j["ledger"].size() == 2);
  // An error is recorded in the ledger but is no finished request in the metrics.
  CHECK(q.metrics_text().find("finish_reason=\"length\"} 1") != std::string::npos);
  CHECK(q.metrics_text().find("finish_reason=\"error\"") == std::string::npos);
  CHECK(q.quiet(false));
  CHECK(!q.quiet(true));
}
