// The conductor's drain on CAF's deterministic scheduler: one request, answered by a response
// promise once nothing runs or waits and the board's staged disk writes are written. A stand-in
// board keeps the jobs it is handed; the test plays the board's replies by hand.
#include <catch2/catch.hpp>

#include <optional>

#include "actors/conductor.hpp"
#include "tests/support/actor_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A board that runs nothing: it keeps the ids of the jobs it is handed.
board_actor::behavior_type held_board(board_actor::pointer, std::shared_ptr<std::vector<std::string>> runs) {
  return {
      [runs](run_atom, const board_job& j) { runs->push_back(j.id); },
      [](step_atom) {},
      [](cancel_atom, const std::string&) {},
      [](clear_atom, cache_tier tier) -> clear_reply {
        return clear_reply{tier, {}};
      },
      [](settings_atom, const cache_settings&) { return true; },
      [](spill_atom) -> spill_stop_reply { return {}; },
      [](idle_atom, const idle_request&) -> idle_reply { return {}; },
      [](suffix_update_atom, const suffix_update&) {},
      [](quiesce_atom) -> cache_stats { return {}; },
  };
}

// A board whose planned-stop spill answers only when the test says so: a job named "release"
// delivers it (from inside the board, as a real board answers when its writes come back).
struct held_spill {
  std::vector<std::string> runs;
  int asked = 0;
  board_actor board;
  caf::typed_response_promise<spill_stop_reply> pending;
};

board_actor::behavior_type spilling_board(board_actor::pointer self, std::shared_ptr<held_spill> h) {
  return {
      [h](run_atom, const board_job& j) {
        if (j.id != "release") return h->runs.push_back(j.id);
        spill_stop_reply r;
        r.conversations = r.written = 1;
        h->pending.deliver(r);
      },
      [](step_atom) {},
      [](cancel_atom, const std::string&) {},
      [](clear_atom, cache_tier tier) -> clear_reply {
        return clear_reply{tier, {}};
      },
      [](settings_atom, const cache_settings&) { return true; },
      [self, h](spill_atom) -> caf::result<spill_stop_reply> {
        ++h->asked;
        h->pending = self->make_response_promise<spill_stop_reply>();
        return h->pending;
      },
      [](idle_atom, const idle_request&) -> idle_reply { return {}; },
      [](suffix_update_atom, const suffix_update&) {},
      [](quiesce_atom) -> cache_stats { return {}; },
  };
}

// A board that runs nothing and answers a quiesce only when the test says so: a job named
// "settle" delivers it (as a real board answers once its writes came back).
struct held_quiesce {
  std::vector<std::string> runs;
  int asked = 0;
  caf::typed_response_promise<cache_stats> pending;
};

board_actor::behavior_type quiescing_board(board_actor::pointer self, std::shared_ptr<held_quiesce> h) {
  return {
      [h](run_atom, const board_job& j) {
        if (j.id != "settle") return h->runs.push_back(j.id);
        h->pending.deliver(cache_stats{});
      },
      [](step_atom) {},
      [](cancel_atom, const std::string&) {},
      [](clear_atom, cache_tier tier) -> clear_reply {
        return clear_reply{tier, {}};
      },
      [](settings_atom, const cache_settings&) { return true; },
      [](spill_atom) -> spill_stop_reply { return {}; },
      [](idle_atom, const idle_request&) -> idle_reply { return {}; },
      [](suffix_update_atom, const suffix_update&) {},
      [self, h](quiesce_atom) -> caf::result<cache_stats> {
        ++h->asked;
        h->pending = self->make_response_promise<cache_stats>();
        return h->pending;
      },
  };
}

std::shared_ptr<const completion_request> small_request() {
  completion_request r;
  r.kind = request_kind::completion;
  r.prompt_text = "hello there";
  r.temperature = 0;
  r.max_tokens = 2;
  return std::make_shared<const completion_request>(r);
}

cache_stats staged(std::uint64_t bytes) {
  cache_stats s;
  s.disk_staged_bytes = bytes;
  return s;
}

ledger_entry ended(const std::string& id) {
  ledger_entry e;
  e.id = id;
  e.finish_reason = run_finish::length;
  return e;
}

// Asks the conductor `atom` (drain, quiesce or started, with its arguments) from an actor of its
// own; the answer lands in the returned optional when it comes.
template <class Atom, class... Args>
std::shared_ptr<std::optional<bool>> ask(caf_fixture& f, const conductor_actor& cond, Atom atom,
                                         Args... args) {
  auto answer = std::make_shared<std::optional<bool>>();
  f.spawn(
      [cond, answer, atom, args...](caf::event_based_actor* self, int) -> caf::behavior {
        self->request(cond, caf::infinite, atom, args...).then([answer](bool ok) { *answer = ok; });
        return {[](int) {}};
      },
      0);
  f.sched->run();
  return answer;
}

// What every case sets up: a conductor (a context of 1,024 on top of `opts`) over the stand-in
// board `make_board` spawns, and a sink that records what the conductor sends it.
struct conducted {
  caf_fixture f;
  conductor_actor cond;
  std::shared_ptr<recorded> seen = std::make_shared<recorded>();
  sink_actor sink;

  template <class MakeBoard>
  explicit conducted(MakeBoard make_board, conductor_options opts = {}) {
    opts.limits.ctx_size = 1024;
    cond = f.spawn(conductor, opts, [this, make_board](done_receiver) { return make_board(*f.sys); });
    sink = caf::actor_cast<sink_actor>(f.spawn(recorder, seen));
    f.sched->run();
  }
  // Hands the conductor request `id`, a small completion, for the sink.
  void generate(const std::string& id) {
    caf::anon_send(cond, generate_atom::value, request_envelope{id, small_request(), 0, sink});
  }
};

}  // namespace

TEST_CASE("a drain is answered once nothing runs or waits and the staged disk writes are written",
          "[actors][conductor]") {
  auto runs = std::make_shared<std::vector<std::string>>();
  conducted c([runs](caf::actor_system& sys) { return sys.spawn(held_board, runs); });
  auto drain = [&] { return ask(c.f, c.cond, drain_atom::value); };

  SECTION("idle: answered at once") {
    const auto a = drain();
    REQUIRE(a->has_value());
    CHECK(**a);
  }

  SECTION("running, then staged writes out: answered only when both are over") {
    c.generate("r1");
    c.generate("r2");
    c.f.sched->run();
    REQUIRE(*runs == std::vector<std::string>{"r1"});  // r2 waits in the queue

    const auto a = drain();
    CHECK_FALSE(a->has_value());  // running and queued

    // r1 ends; as the board does, its tiers (a write staged) come before its ledger entry.
    caf::anon_send(c.cond, tiers_atom::value, staged(4096));
    caf::anon_send(c.cond, done_atom::value, ended("r1"));
    c.f.sched->run();
    REQUIRE(*runs == std::vector<std::string>{"r1", "r2"});
    CHECK_FALSE(a->has_value());  // r2 runs now

    caf::anon_send(c.cond, done_atom::value, ended("r2"));
    c.f.sched->run();
    CHECK_FALSE(a->has_value());  // idle, but a staged write is not on disk yet

    const auto b = drain();  // a second drain waits with the first
    CHECK_FALSE(b->has_value());

    caf::anon_send(c.cond, tiers_atom::value, staged(0));  // the write came back
    c.f.sched->run();
    REQUIRE(a->has_value());
    CHECK(**a);
    REQUIRE(b->has_value());
    CHECK(**b);
  }
}

TEST_CASE("with the session spill a drain asks the board to spill once nothing runs, and waits for it",
          "[actors][conductor][spill]") {
  auto h = std::make_shared<held_spill>();
  conductor_options opts;
  opts.spill = true;
  conducted c(
      [h](caf::actor_system& sys) {
        h->board = sys.spawn(spilling_board, h);
        return h->board;
      },
      opts);
  c.generate("r1");
  c.f.sched->run();
  const auto answer = ask(c.f, c.cond, drain_atom::value);
  CHECK(h->asked == 0);  // r1 runs: its conversation is not final yet
  CHECK_FALSE(answer->has_value());
  caf::anon_send(c.cond, done_atom::value, ended("r1"));
  c.f.sched->run();
  CHECK(h->asked == 1);              // idle now: the spill is asked for
  CHECK_FALSE(answer->has_value());  // and the drain waits for it
  board_job release;
  release.id = "release";
  caf::anon_send(h->board, run_atom::value, release);
  c.f.sched->run();
  REQUIRE(answer->has_value());
  CHECK(**answer);
  CHECK(h->asked == 1);
}

TEST_CASE(
    "a quiesce asks the board once nothing runs or waits, and is answered when the board's writes are in",
    "[actors][conductor]") {
  auto h = std::make_shared<held_quiesce>();
  board_actor board;
  conducted c([h, &board](caf::actor_system& sys) {
    board = sys.spawn(quiescing_board, h);
    return board;
  });
  auto quiesce = [&] { return ask(c.f, c.cond, quiesce_atom::value); };
  c.generate("r1");
  c.generate("r2");
  c.f.sched->run();
  REQUIRE(h->runs == std::vector<std::string>{"r1"});

  const auto a = quiesce();
  CHECK_FALSE(a->has_value());
  CHECK(h->asked == 0);  // r1 runs, r2 waits: the board is not asked yet

  caf::anon_send(c.cond, done_atom::value, ended("r1"));
  c.f.sched->run();
  CHECK(h->asked == 0);  // r2 runs now
  caf::anon_send(c.cond, done_atom::value, ended("r2"));
  c.f.sched->run();
  CHECK(h->asked == 1);  // quiet: the board is asked, and its writes are not in yet
  CHECK_FALSE(a->has_value());

  board_job settle;
  settle.id = "settle";
  caf::anon_send(board, run_atom::value, settle);
  c.f.sched->run();
  REQUIRE(a->has_value());
  CHECK(**a);

  // Quiet already: the board is asked at once; nothing ran, nothing is drained or spilled.
  const auto b = quiesce();
  CHECK(h->asked == 2);
  caf::anon_send(board, run_atom::value, settle);
  c.f.sched->run();
  REQUIRE(b->has_value());
  CHECK(**b);
  CHECK(h->runs == std::vector<std::string>{"r1", "r2"});
}

TEST_CASE("a wait for a start is answered once that many requests run on the board", "[actors][conductor]") {
  auto h = std::make_shared<held_quiesce>();
  conducted c([h](caf::actor_system& sys) { return sys.spawn(quiescing_board, h); });
  auto started = [&](std::size_t n) { return ask(c.f, c.cond, started_atom::value, n); };

  const auto one = started(1);
  const auto two = started(2);
  CHECK_FALSE(one->has_value());  // nothing runs yet
  c.generate("r1");
  c.generate("r2");
  c.f.sched->run();
  REQUIRE(h->runs == std::vector<std::string>{"r1"});
  REQUIRE(one->has_value());
  CHECK(**one);
  CHECK_FALSE(two->has_value());  // one slot: r2 waits, so two never run at once

  // Asked while one runs: answered at once.
  const auto again = started(1);
  REQUIRE(again->has_value());
  CHECK(**again);
  caf::anon_send(c.cond, done_atom::value, ended("r1"));
  c.f.sched->run();
  CHECK(h->runs == std::vector<std::string>{"r1", "r2"});
  CHECK_FALSE(two->has_value());
}

TEST_CASE("a wait for idle runs is answered once the board's stats show that many finished",
          "[actors][conductor]") {
  auto h = std::make_shared<held_quiesce>();
  conducted c([h](caf::actor_system& sys) { return sys.spawn(quiescing_board, h); });
  auto tiers_with = [](long finished) {
    cache_stats s;
    s.compaction.emplace();
    s.compaction->worker.finished = finished;
    return s;
  };
  const auto two = ask(c.f, c.cond, idle_runs_atom::value, 2L);
  CHECK_FALSE(two->has_value());  // no stats yet
  caf::anon_send(c.cond, tiers_atom::value, tiers_with(1));
  c.f.sched->run();
  CHECK_FALSE(two->has_value());
  caf::anon_send(c.cond, tiers_atom::value, tiers_with(2));
  c.f.sched->run();
  REQUIRE(two->has_value());
  CHECK(**two);
  // Reached already: answered at once.
  const auto one = ask(c.f, c.cond, idle_runs_atom::value, 1L);
  REQUIRE(one->has_value());
  CHECK(**one);
}
