// The compaction figures (issue 15, docs/COMPACTION.md), in one process, printed as one JSON
// object (progress on stderr). Two board runners on two engines of the same random weights, each
// with prewrites kept and the device tiers' default budgets (GiBs: a 32k-token conversation of
// `small` is about 100 MiB), both holding the same conversation of an opencode session:
//   turn 1:        --tokens byte tokens prefilled cold, 8 answered greedily (on A, then on B);
//                  it leaves the end anchor (the rows);
//   the turn:      opencode 1.18.33's continuation turn (plan_continuation of its compaction
//                  system text and instructions, the builtin renderer, the byte tokenizer), or
//                  --turn-tokens printable bytes in its place;
//                  the guard's lines are two stretches of the rows, decoded;
//   continuation:  on A, the compaction request (a flattened transcript of --tokens other
//                  tokens and the turn, with the plan) before any prewrite: via "compaction",
//                  the turn prefilled (exit 1 otherwise);
//   idle:          on A, idle work (the plan, greedy, --max-tokens) run to its end: its time
//                  (start_idle and every step) and its steps;
//   prewritten:    on A, the same compaction request again: via "prewritten", 0 prefilled
//                  (exit 1 otherwise);
//   during_idle:   the next ordinary turn (the rows and 64 new tokens, resumed at the end
//                  anchor) with no idle work on one runner and, on the other, arriving while
//                  idle work runs: idle work started and stepped k steps, then the arrival
//                  (t0), ONE more idle step (the one in flight when it arrived, timed alone:
//                  in_flight_step_ms), preempt_idle(), and the turn with received_ns = t0.
//                  During the idle prefill (k = 0; turn N1: plain on A, after idle on B) and
//                  during the idle decode (k = the prefill's steps + 2; turn N2: after idle on
//                  A, plain on B). extra_ms is the TTFT with idle work minus the TTFT without.
//                  Both runners answer the same (same_answer, exit 1 otherwise), so that both
//                  hold the same conversation for N2;
//   as_sent:       last, on A: the compaction request without its plan (the flattened
//                  transcript and the turn, sharing no token with the rows): a cold prefill of
//                  the whole prompt, as a server without the continuation serves it.
// TTFT is each finished event's cache.ttft_ms, from received_ns (set when the job starts, or at
// the arrival). Ratios are as_sent over the continuation and over the prewritten answer.
// Usage: anchorage-bench-compaction [--preset small] [--tokens 32768] [--turn-tokens N]
//                                   [--max-tokens 64] [--ctx-size N]
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/log.hpp"
#include "runtime/engine/blas_setup.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/engine/engine_options.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/compaction/compaction_plan.hpp"
#include "runtime/compaction/opencode_compaction.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "runtime/board/board_runner.hpp"
#include "tools/bench_common.hpp"

using namespace anchorage;
using namespace anchorage::bench;
using json = nlohmann::ordered_json;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char* session = "header:ses_A";
constexpr long turn_answer = 8;         // tokens each ordinary turn answers
constexpr std::size_t new_tokens = 64;  // the next turn's new tokens

[[noreturn]] void die(const std::string& what) {
  log_error() << "anchorage-bench-compaction: " << what;
  std::exit(1);
}

board_runner_options runner_options() {
  board_runner_options o;
  o.decode_block = 2;
  o.prewrites = std::make_shared<compaction_prewrites>();
  return o;
}

board_job opencode_job(const std::vector<token_id>& prompt, long max_tokens, const std::string& id) {
  board_job j;
  j.id = id;
  j.route = request_kind::completion;
  j.session_key = session;
  j.client()->opencode = true;
  j.prompt.assign(prompt.begin(), prompt.end());
  j.sampling.temperature = 0;
  j.sampling.max_tokens = max_tokens;
  return j;
}

// A job started on `r` (received_ns: now, unless set) run to its end: its finished event.
stream_event run_job(board_runner& r, board_job j) {
  const std::string id = j.id;
  if (j.received_ns == 0) j.received_ns = steady_ns();
  std::optional<stream_event> done;
  board_events out = r.start(std::move(j));
  for (;;) {
    for (auto& ev : out.events) {
      if (ev.what == stream_event::kind::failed) die(id + " failed: " + ev.error.message);
      if (ev.what == stream_event::kind::finished) done = ev;
    }
    if (!out.step_again) break;
    out = r.step();
  }
  if (!done) die(id + " never finished");
  log_info() << id << ": source " << done->cache.source << ", via '" << to_string(done->cache.via)
             << "', ttft " << done->cache.ttft_ms << " ms, prefilled " << done->cache.prefilled_tokens;
  return *done;
}

json turn_json(const stream_event& e) {
  return {{"ttft_ms", e.cache.ttft_ms},
          {"source", to_string(e.cache.source)},
          {"via", e.cache.via},
          {"resumed_at", e.cache.resumed_at},
          {"prefilled_tokens", e.cache.prefilled_tokens},
          {"prompt_tokens", e.usage.prompt_tokens}};
}

// Idle work run to its end: its time, steps and answer.
struct idle_figures {
  double ms = 0;
  long steps = 0;
  idle_reply reply;
};

idle_figures run_idle(board_runner& r, const board_job& tmpl) {
  idle_figures f;
  const auto t0 = clock_type::now();
  board_events out = r.start_idle(tmpl);
  for (;;) {
    if (out.idle) f.reply = *out.idle;
    if (!out.step_again) break;
    out = r.step();
    ++f.steps;
  }
  f.ms = seconds_since(t0) * 1e3;
  if (f.reply.what != idle_reply::outcome::finished)
    die(std::string("idle work ended ") + to_string(f.reply.what) + ", not finished");
  return f;
}

// The next turn arriving while idle work runs: started, stepped `k` steps (or, with
// `after_prefill`, until its prefill is done and then `k` more), then the arrival, the step in
// flight, the preemption, and the turn.
struct arrival_figures {
  long k = 0;
  double in_flight_step_ms = 0, preempt_ms = 0;
  stream_event turn;
};

arrival_figures arrive_during_idle(board_runner& r, const board_job& tmpl, std::size_t prefill_end, long k,
                                   bool after_prefill, board_job next) {
  arrival_figures f;
  board_events out = r.start_idle(tmpl);
  if (!r.running_idle()) die("idle work did not start");
  if (after_prefill)
    while (out.step_again && r.active().length() < prefill_end) {
      out = r.step();
      ++f.k;
    }
  for (long i = 0; i < k && out.step_again; ++i) {
    out = r.step();
    ++f.k;
  }
  if (!out.step_again || out.idle) die("idle work ended before the arrival");
  const std::int64_t arrival = steady_ns();
  auto t = clock_type::now();
  out = r.step();  // the step in flight when the request arrived
  f.in_flight_step_ms = seconds_since(t) * 1e3;
  if (out.idle || !r.running_idle()) die("idle work ended with the step in flight");
  t = clock_type::now();
  const board_events p = r.preempt_idle();
  f.preempt_ms = seconds_since(t) * 1e3;
  if (!p.idle || p.idle->what != idle_reply::outcome::preempted) die("preempt_idle did not preempt");
  next.received_ns = arrival;
  f.turn = run_job(r, std::move(next));
  return f;
}

json arrival_json(const arrival_figures& a, const stream_event& plain) {
  return {{"k", a.k},
          {"in_flight_step_ms", a.in_flight_step_ms},
          {"preempt_ms", a.preempt_ms},
          {"ttft_ms", a.turn.cache.ttft_ms},
          {"plain_ttft_ms", plain.cache.ttft_ms},
          {"extra_ms", a.turn.cache.ttft_ms - plain.cache.ttft_ms},
          {"source", to_string(a.turn.cache.source)},
          {"resumed_at", a.turn.cache.resumed_at},
          {"prefilled_tokens", a.turn.cache.prefilled_tokens}};
}

std::vector<token_id> next_turn(const board_runner& r, std::uint64_t seed) {
  auto p = r.tiers().resident().tokens();
  const auto more = prose(new_tokens, seed);
  p.insert(p.end(), more.begin(), more.end());
  return p;
}

void check_same(const stream_event& a, const stream_event& b, board_runner& ra, board_runner& rb,
                const std::string& what) {
  if (a.output.content != b.output.content) die(what + ": the answers differ with and without idle work");
  if (ra.tiers().resident().tokens() != rb.tiers().resident().tokens())
    die(what + ": the runners hold different conversations");
  if (a.cache.source != cache_source::end || b.cache.source != cache_source::end)
    die(what + ": not resumed at the end anchor");
}

}  // namespace

int main(int argc, char** argv) {
  select_blas_core(argv);
  engine_options eo;
  eo.preset = "small";
  std::size_t tokens = 32768;
  long max_tokens = 64;
  std::size_t turn_tokens = 0;  // 0: opencode's turn
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--tokens")
      tokens = std::stoul(v);
    else if (a == "--max-tokens")
      max_tokens = std::stol(v);
    else if (a == "--turn-tokens")
      turn_tokens = std::stoul(v);
    else if (!eo.parse(a, v))
      die("unknown argument " + a);
  }
  const tokenizer tok;
  const std::optional<compaction_plan> planned = plan_continuation(
      opencode_compaction_system_text(), opencode_compaction_instructions(), chat_renderer::builtin, tok);
  if (!planned) die("plan_continuation gave no plan");
  compaction_plan plan = *planned;
  plan.shape = "opencode-1.18.33";
  if (turn_tokens) {
    const auto t = prose(turn_tokens, 6);
    plan.turn.assign(t.begin(), t.end());
  }
  const std::size_t turn = plan.turn.size();

  model_config c = eo.config();
  if (!eo.ctx_size) {  // room for three turns and idle work at the last end, whole grid lines
    const std::size_t need = tokens + 3 * (new_tokens + static_cast<std::size_t>(turn_answer)) + turn +
                             static_cast<std::size_t>(max_tokens) + 8;
    const std::size_t g = static_cast<std::size_t>(c.grid);
    c.ctx_size = static_cast<int>((need + g - 1) / g * g);
  }
  const tensor_map weights = random_weights(c, eo.weights_seed);
  board_runner a(std::make_shared<engine>(c, weights, eo.backend()), runner_options());
  board_runner b(std::make_shared<engine>(c, weights, eo.backend()), runner_options());

  log_info() << "turn 1: " << tokens << " tokens cold (" << c.preset << "), on A then on B";
  const auto p1 = prose(tokens, 1);
  const stream_event t1 = run_job(a, opencode_job(p1, turn_answer, "t1-a"));
  run_job(b, opencode_job(p1, turn_answer, "t1-b"));
  const std::vector<token_id> rows = a.tiers().resident().tokens();
  if (rows != b.tiers().resident().tokens()) die("the runners hold different conversations after turn 1");
  if (rows.size() < 60) die("--tokens too small for the guard's lines");
  plan.user_lines = {tok.decode(std::vector<token_id>(rows.begin() + 7, rows.begin() + 40)),
                     tok.decode(std::vector<token_id>(rows.end() - 20, rows.end() - 6))};

  // The compaction request as opencode sends it: a flattened transcript (other tokens) and the turn.
  std::vector<token_id> sent = prose(tokens, 3);
  sent.insert(sent.end(), plan.turn.begin(), plan.turn.end());
  auto compaction_request = [&](const std::string& id, bool with_plan) {
    board_job j = opencode_job(sent, max_tokens, id);
    if (with_plan) j.client()->compaction = plan;
    return j;
  };
  board_job tmpl;
  tmpl.sampling.temperature = 0;
  tmpl.sampling.max_tokens = max_tokens;
  tmpl.kind = idle_prewrite{plan};

  log_info() << "continuation: the turn of " << turn << " tokens at the end anchor";
  const stream_event cont = run_job(a, compaction_request("compact-continuation", true));
  if (cont.cache.via != cache_via::compaction || cont.cache.prefilled_tokens != static_cast<long>(turn))
    die(std::string("the compaction request was not served as the continuation (via '") +
        to_string(cont.cache.via) + "')");

  if (!a.idle_candidate(tmpl, rows.size())) die("A is no candidate for idle work");
  log_info() << "idle work: the summary prewritten (" << max_tokens << " tokens at most)";
  const idle_figures idle = run_idle(a, tmpl);
  const stream_event pre = run_job(a, compaction_request("compact-prewritten", true));
  if (pre.cache.via != cache_via::prewritten || pre.cache.prefilled_tokens != 0)
    die(std::string("the compaction request was not answered from the prewrite (via '") +
        to_string(pre.cache.via) + "')");
  if (pre.output.content != cont.output.content) die("the prewritten answer differs from the continuation's");

  log_info() << "during idle: an arrival during the idle prefill (N1)";
  const std::size_t prefill_end = rows.size() + turn;
  const stream_event n1_plain = run_job(a, opencode_job(next_turn(a, 4), turn_answer, "n1-plain"));
  const arrival_figures n1 = arrive_during_idle(b, tmpl, prefill_end, 0, false,
                                                opencode_job(next_turn(b, 4), turn_answer, "n1-idle"));
  check_same(n1_plain, n1.turn, a, b, "N1");

  log_info() << "during idle: an arrival during the idle decode (N2)";
  const std::size_t prefill_end2 = a.tiers().resident().tokens().size() + turn;
  const arrival_figures n2 = arrive_during_idle(a, tmpl, prefill_end2, 2, true,
                                                opencode_job(next_turn(a, 5), turn_answer, "n2-idle"));
  const stream_event n2_plain = run_job(b, opencode_job(next_turn(b, 5), turn_answer, "n2-plain"));
  check_same(n2.turn, n2_plain, a, b, "N2");

  log_info() << "as sent: " << sent.size() << " tokens cold";
  const stream_event as_sent = run_job(a, compaction_request("compact-as-sent", false));

  json out;
  out["preset"] = c.preset;
  out["tokens"] = tokens;
  out["rows"] = rows.size();
  out["turn_tokens"] = turn;
  out["max_tokens"] = max_tokens;
  out["ctx_size"] = c.ctx_size;
  out["turn1"] = turn_json(t1);
  out["as_sent"] = turn_json(as_sent);
  out["continuation"] = turn_json(cont);
  out["continuation"]["completion_tokens"] = cont.usage.completion_tokens;
  out["idle"] = {{"ms", idle.ms},
                 {"steps", idle.steps},
                 {"reply_steps", idle.reply.steps},
                 {"output_tokens", idle.reply.output_tokens}};
  out["prewritten"] = turn_json(pre);
  out["prewritten"]["completion_tokens"] = pre.usage.completion_tokens;
  out["during_idle"] = {{"prefill", arrival_json(n1, n1_plain)}, {"decode", arrival_json(n2, n2_plain)}};
  out["ratios"] = {{"ttft_as_sent_over_continuation", as_sent.cache.ttft_ms / cont.cache.ttft_ms},
                   {"ttft_as_sent_over_prewritten", as_sent.cache.ttft_ms / pre.cache.ttft_ms},
                   {"ttft_continuation_over_prewritten", cont.cache.ttft_ms / pre.cache.ttft_ms}};
  out["same_answer"] =
      true;  // checked: the prewrite and the continuation; each next turn with and without idle work
  std::cout << out.dump(2) << "\n";
  return 0;
}
