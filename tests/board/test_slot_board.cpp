// Several slots at once (issue 13): requests on their own slots, stepped one step of one slot at
// a time. A short request that arrives during a long prefill starts after that prefill's current
// chunk and finishes first; every request answers what it answers alone; a session's follow-up
// goes back to its own slot and resumes at its end anchor there.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "runtime/engine/engine_weights.hpp"
#include "runtime/board/slot_board.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/disk_fixture.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::vector<std::shared_ptr<engine>> engines(const model_config& c, int n) {
  std::vector<std::shared_ptr<engine>> v;
  for (int i = 0; i < n; ++i) v.push_back(std::shared_ptr<engine>(make_engine(c).release()));
  return v;
}

// What each request got: its events by id, in order, and the step at which each arrived.
struct board_log {
  std::map<std::string, std::vector<stream_event>> events;
  std::map<std::string, long> first_token_step, finished_step;
  std::map<std::string, std::size_t> slot_of;
  long steps = 0;

  void take(const slot_events& s) {
    for (const auto& ev : s.events.events) {
      events[ev.id].push_back(ev);
      slot_of[ev.id] = s.slot;
      if (ev.what == stream_event::kind::delta && !first_token_step.count(ev.id))
        first_token_step[ev.id] = steps;
      if (ev.what == stream_event::kind::finished) finished_step[ev.id] = steps;
    }
  }
  const stream_event& finished(const std::string& id) const { return events.at(id).back(); }
};

void run_all(slot_board& b, board_log& log) {
  while (b.wants_step()) {
    ++log.steps;
    for (const auto& s : b.step()) log.take(s);
  }
}

// The text a job answers on a board of one slot with nothing cached.
std::string alone(const model_config& c, const board_job& j) {
  board_runner r(std::shared_ptr<engine>(make_engine(c).release()), small_runner_options());
  const run_result res = run_to_end(r, r.start(j));
  return res.text;
}

}  // namespace

TEST_CASE("slots: a short request during a long prefill starts within one chunk and ends first",
          "[tiers][slots]") {
  const model_config c = test_config("tiny", 1024);
  slot_board b(engines(c, 2), small_runner_options());
  const auto long_prompt = test_tokens(static_cast<std::size_t>(8 * c.grid), 701);
  const auto short_prompt = test_tokens(40, 702);
  board_log log;
  log.take(b.start(job_of(long_prompt, 6, "long", "A")));
  ++log.steps;
  for (const auto& s : b.step()) log.take(s);  // the long prefill's first chunk
  const long arrived = log.steps;
  REQUIRE(b.idle_slots() == 1);
  const slot_events started = b.start(job_of(short_prompt, 6, "short", "B"));
  const std::size_t short_slot = started.slot;
  log.take(started);
  // Which slot each step ran, from the short request's arrival on.
  std::vector<std::size_t> order;
  while (b.wants_step()) {
    ++log.steps;
    for (const auto& st : b.step()) {
      order.push_back(st.slot);
      log.take(st);
    }
  }
  REQUIRE(log.finished_step.count("long"));
  REQUIRE(log.finished_step.count("short"));
  CHECK(log.slot_of["long"] != log.slot_of["short"]);
  // The short one runs its first step after at most one more step of the long one, and it is
  // done before the long prefill is.
  REQUIRE_FALSE(order.empty());
  const auto first_short = std::find(order.begin(), order.end(), short_slot);
  CHECK(first_short - order.begin() <= 1);
  CHECK(log.finished_step["short"] < log.first_token_step["long"]);
  CHECK(log.finished_step["short"] - arrived < 12);
  // Each answered what it answers alone.
  CHECK(log.finished("long").output.content == alone(c, job_of(long_prompt, 6, "long", "A")));
  CHECK(log.finished("short").output.content == alone(c, job_of(short_prompt, 6, "short", "B")));
  CHECK(log.finished("long").cache.slot == static_cast<long>(log.slot_of["long"]));
}

TEST_CASE("slots: decoding slots take turns step by step", "[tiers][slots]") {
  const model_config c = test_config("tiny", 1024);
  slot_board b(engines(c, 3), small_runner_options());
  board_log log;
  for (int k = 0; k < 3; ++k) {
    const std::string id = "r" + std::to_string(k);
    log.take(b.start(job_of(test_tokens(60, static_cast<std::uint64_t>(710 + k)), 12, id, id)));
  }
  CHECK(b.idle_slots() == 0);
  CHECK_FALSE(b.choose(job_of(test_tokens(10, 719), 1, "late", "late")));
  CHECK_THROWS_AS(b.start(job_of(test_tokens(10, 719), 1, "late", "late")), std::logic_error);
  // Steps alternate: over any three consecutive steps while all three decode, each slot runs once.
  std::vector<std::size_t> order;
  while (b.wants_step()) {
    const auto stepped = b.step();
    REQUIRE(stepped.size() == 1);  // engines of their own weights: no batch
    order.push_back(stepped.front().slot);
    log.take(stepped.front());
  }
  for (std::size_t i = 0; i + 2 < order.size() && i < 9; i += 3) {
    CHECK(order[i] != order[i + 1]);
    CHECK(order[i + 1] != order[i + 2]);
    CHECK(order[i] != order[i + 2]);
  }
  for (int k = 0; k < 3; ++k) {
    const std::string id = "r" + std::to_string(k);
    CHECK(log.finished(id).output.content ==
          alone(c, job_of(test_tokens(60, static_cast<std::uint64_t>(710 + k)), 12, id, id)));
  }
  const cache_stats st = b.stats();
  REQUIRE(st.slots.size() == 3);
  for (const auto& sl : st.slots) {
    CHECK(sl.state == "idle");
    CHECK(sl.resident_tokens > 60);
  }
}

TEST_CASE("slots: a session's follow-up goes back to its slot and resumes there", "[tiers][slots]") {
  const model_config c = test_config("tiny", 1024);
  slot_board b(engines(c, 2), small_runner_options());
  const auto a = test_tokens(static_cast<std::size_t>(2 * c.grid + 30), 731);
  const auto other = test_tokens(static_cast<std::size_t>(c.grid + 10), 732);
  board_log log;
  log.take(b.start(job_of(a, 4, "a1", "A")));
  run_all(b, log);
  log.take(b.start(job_of(other, 4, "b1", "B")));
  run_all(b, log);
  CHECK(log.slot_of["a1"] != log.slot_of["b1"]);
  // A's next turn: what its slot's rows hold, plus more.
  auto next = b.runner(log.slot_of["a1"]).tiers().resident().tokens();
  const auto more = test_tokens(12, 733);
  next.insert(next.end(), more.begin(), more.end());
  const auto choice = b.choose(job_of(next, 4, "a2", "A"));
  REQUIRE(choice);
  CHECK(choice->slot == log.slot_of["a1"]);
  CHECK(choice->why == slot_reason::shared);
  log.take(b.start(job_of(next, 4, "a2", "A")));
  run_all(b, log);
  CHECK(log.slot_of["a2"] == log.slot_of["a1"]);
  CHECK(log.finished("a2").cache.source == cache_source::end);
  // B's rows are as B left them.
  CHECK(b.runner(log.slot_of["b1"]).tiers().resident().tokens().size() >= other.size());
}

TEST_CASE("slots: tokens shared below every anchor are no reason to take an occupied slot",
          "[tiers][slots]") {
  const model_config c = test_config("tiny", 1024);
  slot_board b(engines(c, 2), small_runner_options());
  const auto a = test_tokens(static_cast<std::size_t>(2 * c.grid + 30), 741);
  board_log log;
  log.take(b.start(job_of(a, 4, "a1", "A")));
  run_all(b, log);
  const std::size_t a_slot = log.slot_of["a1"];
  // B starts as A did for 20 tokens (two system prompts that open alike), less than a grid line:
  // A's slot would resume it nowhere, so B takes the empty slot and A's conversation stays.
  auto few = std::vector<token_id>(a.begin(), a.begin() + 20);
  const auto rest = test_tokens(static_cast<std::size_t>(c.grid + 10), 742);
  few.insert(few.end(), rest.begin(), rest.end());
  const auto choice = b.choose(job_of(few, 4, "b1", "B"));
  REQUIRE(choice);
  CHECK(choice->slot != a_slot);
  CHECK(choice->why == slot_reason::empty);
  // A request that shares a grid line and more with A resumes at A's grid anchor: A's slot.
  auto line = std::vector<token_id>(a.begin(), a.begin() + c.grid + 5);
  line.insert(line.end(), rest.begin(), rest.end());
  const auto at_line = b.choose(job_of(line, 4, "c1", "C"));
  REQUIRE(at_line);
  CHECK(at_line->slot == a_slot);
  CHECK(at_line->why == slot_reason::shared);
  CHECK(at_line->shared == static_cast<std::size_t>(c.grid));
  // B runs beside A's conversation, and A's next turn resumes at its end anchor.
  log.take(b.start(job_of(few, 4, "b1", "B")));
  run_all(b, log);
  CHECK(log.slot_of["b1"] != a_slot);
  auto next = b.runner(a_slot).tiers().resident().tokens();
  const auto more = test_tokens(12, 743);
  next.insert(next.end(), more.begin(), more.end());
  log.take(b.start(job_of(next, 4, "a2", "A")));
  run_all(b, log);
  CHECK(log.slot_of["a2"] == a_slot);
  CHECK(log.finished("a2").cache.source == cache_source::end);
}

TEST_CASE("slots: a guest on an occupied slot leaves the slot its conversation's session", "[tiers][slots]") {
  const model_config c = test_config("tiny", 1024);
  slot_board b(engines(c, 2), small_runner_options());
  const auto a = test_tokens(static_cast<std::size_t>(2 * c.grid + 30), 751);
  const auto other = test_tokens(static_cast<std::size_t>(2 * c.grid + 20), 752);
  board_log log;
  log.take(b.start(job_of(a, 4, "a1", "A")));
  run_all(b, log);
  log.take(b.start(job_of(other, 4, "b1", "B")));
  run_all(b, log);
  const std::size_t a_slot = log.slot_of["a1"];
  REQUIRE(log.slot_of["b1"] != a_slot);
  CHECK(b.session_of(a_slot) == "A");
  // A short side request of another session (a title) on the slot used least recently, A's:
  // it runs stashed, A's rows stay, and so does A's name on the slot.
  log.take(b.start(job_of(test_tokens(12, 753), 4, "g1", "G")));
  run_all(b, log);
  REQUIRE(log.slot_of["g1"] == a_slot);
  CHECK(log.finished("g1").cache.via == cache_via::stash);
  CHECK(b.session_of(a_slot) == "A");
  const cache_stats st = b.stats();
  CHECK(st.slots.at(a_slot).session_key == "A");
  // A's next turn resumes at its end anchor there.
  auto next = b.runner(a_slot).tiers().resident().tokens();
  const auto more = test_tokens(12, 754);
  next.insert(next.end(), more.begin(), more.end());
  log.take(b.start(job_of(next, 4, "a2", "A")));
  run_all(b, log);
  CHECK(log.slot_of["a2"] == a_slot);
  CHECK(log.finished("a2").cache.source == cache_source::end);
}

TEST_CASE("slots: the budget is one for all slots", "[tiers][slots]") {
  const model_config c = test_config("tiny", 1024);
  board_runner_options o = small_runner_options();
  slot_board b(engines(c, 2), o);
  CHECK(&b.runner(0).tiers().budget() == &b.runner(1).tiers().budget());
  CHECK(b.runner(0).tiers().budget().limit(budget_pool::resident) == o.cache.resident_bytes);
  board_log log;
  log.take(b.start(job_of(test_tokens(static_cast<std::size_t>(2 * c.grid), 741), 2, "x", "X")));
  run_all(b, log);
  // What slot 0 holds counts in the budget slot 1 sees.
  CHECK(b.runner(1).tiers().budget().used(budget_pool::resident) > 0);
}

TEST_CASE("slots: decoding slots of one weight set decode in one batch and answer as alone",
          "[tiers][slots][batch]") {
  for (const char* preset : {"tiny", "qwen35-tiny"}) {
    INFO(preset);
    const model_config c = test_config(preset, 1024);
    const auto w = std::make_shared<const engine_weights>(c, test_weights(c));
    std::vector<std::shared_ptr<engine>> shared;
    for (int i = 0; i < 3; ++i) shared.push_back(std::make_shared<engine>(w));
    slot_board b(shared, small_runner_options());
    board_log log;
    std::vector<board_job> jobs;
    for (int k = 0; k < 3; ++k) {
      const std::string id = "r" + std::to_string(k);
      // Greedy: a batched decode row is not bit-identical to a solo one, the greedy tokens are.
      board_job j =
          job_of(test_tokens(static_cast<std::size_t>(50 + 17 * k), static_cast<std::uint64_t>(750 + k)), 16,
                 id, id);
      j.sampling.temperature = 0;
      jobs.push_back(j);
      log.take(b.start(j));
    }
    std::size_t widest = 0;
    while (b.wants_step()) {
      const auto stepped = b.step();
      widest = std::max(widest, stepped.size());
      for (const auto& s : stepped) log.take(s);
    }
    CHECK(widest == 3);
    CHECK(b.batched_steps() >= 10);
    for (const auto& j : jobs) {
      REQUIRE(log.finished_step.count(j.id));
      CHECK(log.finished(j.id).usage.completion_tokens == 16);
      CHECK(log.finished(j.id).output.content == alone(c, j));
    }
  }
}

TEST_CASE("slots: a mixed load with a cancel answers as alone, decode steps never a chunk apart",
          "[tiers][slots][batch]") {
  for (const char* preset : {"tiny", "tiny-mtp"}) {
    INFO(preset);
    const model_config c = test_config(preset, 1024);
    const auto w = std::make_shared<const engine_weights>(c, test_weights(c));
    std::vector<std::shared_ptr<engine>> shared;
    for (int i = 0; i < 4; ++i) shared.push_back(std::make_shared<engine>(w));
    slot_board b(shared, small_runner_options());
    board_log log;
    // Two short prompts decode while a long one prefills; a third short one comes later; one of
    // them is cancelled on the way.
    std::vector<board_job> jobs = {
        job_of(test_tokens(40, 761), 24, "s1", "s1"),
        job_of(test_tokens(70, 762), 24, "s2", "s2"),
        job_of(test_tokens(static_cast<std::size_t>(6 * c.grid + 17), 763), 8, "long", "L"),
        job_of(test_tokens(33, 764), 16, "s3", "s3"),
    };
    for (int k = 0; k < 3; ++k) log.take(b.start(jobs[static_cast<std::size_t>(k)]));
    // Per step: whether it was one of the long prompt's prefill chunks, and whether a short
    // request was still decoding then.
    std::vector<std::pair<bool, bool>> steps;
    bool cancelled = false, late = false;
    while (b.wants_step()) {
      bool chunk = false;
      for (const auto& s : b.step()) {
        for (const auto& ev : s.events.events)
          chunk = chunk || (ev.id == "long" && ev.what == stream_event::kind::progress);
        log.take(s);
      }
      const bool shorts_left = !log.finished_step.count("s1") || !log.finished_step.count("s3");
      steps.emplace_back(chunk, shorts_left && late);
      if (steps.size() == 3 && !late) {
        log.take(b.start(jobs[3]));
        late = true;
      }
      if (steps.size() == 6 && !cancelled) {
        b.cancel("s2");
        cancelled = true;
      }
    }
    // While short requests decode, no two prefill chunks of the long one run back to back.
    std::size_t chunks_in_a_row = 0, most = 0;
    for (const auto& [chunk, decoding] : steps) {
      chunks_in_a_row = chunk ? chunks_in_a_row + 1 : 0;
      if (decoding) most = std::max(most, chunks_in_a_row);
    }
    CHECK(most == 1);
    CHECK(log.finished("s2").finish_reason == run_finish::cancelled);
    for (const auto& j : jobs) {
      if (j.id == "s2") continue;
      REQUIRE(log.finished_step.count(j.id));
      CHECK(log.finished(j.id).output.content == alone(c, j));
    }
    CHECK(b.batched_steps() > 0);
  }
}

TEST_CASE("slots: a grid-anchor resume on one of 2 or 4 slots equals a cold prefill bit for bit",
          "[tiers][slots][exact]") {
  for (int n : {2, 4}) {
    for (const char* preset : {"tiny", "qwen35-tiny"}) {
      INFO(n << " slots, " << preset);
      const model_config c = test_config(preset, 1024);
      const std::size_t g = static_cast<std::size_t>(c.grid);
      const auto w = std::make_shared<const engine_weights>(c, test_weights(c));
      std::vector<std::shared_ptr<engine>> shared;
      for (int i = 0; i < n; ++i) shared.push_back(std::make_shared<engine>(w));
      slot_board b(shared, small_runner_options());
      board_log log;
      const auto head = test_tokens(3 * g, 771);
      log.take(b.start(job_of(concat(head, test_tokens(g / 3, 772)), 6, "a1", "A")));
      // Other sessions on the other slots, decoding while A's second turn prefills.
      for (int k = 1; k < n; ++k) {
        const std::string id = "o" + std::to_string(k);
        log.take(b.start(job_of(test_tokens(50, static_cast<std::uint64_t>(780 + k)), 20, id, id)));
      }
      run_all(b, log);
      const auto second = concat(head, test_tokens(g / 2 + 5, 773));
      log.take(b.start(job_of(second, 1, "a2", "A")));
      for (int k = 1; k < n; ++k) {
        const std::string id = "p" + std::to_string(k);
        log.take(b.start(job_of(test_tokens(40, static_cast<std::uint64_t>(790 + k)), 20, id, id)));
      }
      run_all(b, log);
      REQUIRE(log.slot_of["a2"] == log.slot_of["a1"]);
      CHECK(log.finished("a2").cache.source == cache_source::resident);
      CHECK(log.finished("a2").cache.resumed_at == static_cast<long>(3 * g));
      // One output token, never forwarded: the slot's engine holds the prompt's rows only.
      const engine& e = b.runner(log.slot_of["a2"]).active();
      REQUIRE(e.length() == second.size());
      const auto cold = make_engine(c);
      cold->prefill(second);
      require_same_state(state_bytes(e.cache_state(), second.size()),
                         state_bytes(cold->cache_state(), second.size()), e.layout());
    }
  }
}

TEST_CASE("slots: the stats show a prefill's progress as it goes, and each slot's anchors once it is held",
          "[tiers][slots][progress]") {
  const model_config c = test_config("tiny", 1024);
  const long g = c.grid;
  slot_board b(engines(c, 2), small_runner_options());
  const auto prompt = test_tokens(static_cast<std::size_t>(4 * g), 711);
  slot_events first = b.start(job_of(prompt, 3, "p", "A"));
  const std::size_t slot = first.slot;
  const slot_stats started = b.stats().slots.at(slot);  // started: nothing forwarded yet
  CHECK(started.prefill_total == 4 * g);
  CHECK(started.prefill_done == 0);
  std::vector<long> done;
  while (b.wants_step()) {
    for (const auto& s : b.step()) {
      bool progressed = false;
      for (const auto& ev : s.events.events)
        progressed = progressed || ev.what == stream_event::kind::progress;
      // A progress step tells the board to send the stats, which hold where the prefill is.
      if (progressed) CHECK(s.events.tiers_changed);
    }
    const slot_stats st = b.stats().slots.at(slot);
    if (st.prefill_total > 0) {
      CHECK(st.prefill_total == 4 * g);
      CHECK(st.prefill_cached == 0);
      done.push_back(st.prefill_done);
    }
  }
  // Seen after each chunk but the last (the prefill is over once the last chunk is forwarded).
  CHECK(done == std::vector<long>{g, 2 * g, 3 * g});
  const slot_stats end = b.stats().slots.at(slot);
  CHECK(end.prefill_total == 0);
  CHECK(end.state == "idle");
  // The resident prompt's grid anchors and its end anchor, as the resident prefix holds them.
  const resident_prefix& r = b.runner(slot).tiers().resident();
  REQUIRE_FALSE(end.anchors.empty());
  CHECK(end.anchors.size() == r.anchors().size());
  CHECK(std::is_sorted(end.anchors.begin(), end.anchors.end()));
  for (std::size_t a : end.anchors) CHECK(a % static_cast<std::size_t>(g) == 0);
  CHECK(end.end_anchor == r.end_position());
  CHECK(end.end_anchor > 0);
  const nlohmann::json j = end;
  CHECK(j["anchors"] == end.anchors);
  CHECK(j["end_anchor"] == end.end_anchor);
  CHECK(j["prefill"].is_null());
  // The other slot holds nothing.
  const nlohmann::json other = b.stats().slots.at(1 - slot);
  CHECK(other["anchors"] == nlohmann::json::array());
  CHECK(other["end_anchor"].is_null());
}
