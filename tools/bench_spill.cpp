// The session spill's figures (issue 14), in one process, printed as one JSON object (progress
// on stderr). A board of one slot with a spill keeper on a fresh folder under --dir:
//   turn 1:    --tokens byte tokens prefilled cold, --max-tokens answered greedily; turn 2's
//              prompt is the conversation the slot then holds and 64 new tokens;
//   spill:     the planned stop (slot_board::spill_for_stop), each job written with
//              execute_spill_write through a uring_env (timed: the write bandwidth) and
//              committed; then a new keeper scans the folder and a new board, on a fresh engine
//              of the same weights, reads the conversation back at its construction (timed:
//              read_back_ms; the keeper's own timing of spill_store::read_verified gives the
//              read bandwidth); turn 2 on it must come from the spill (exit 1 otherwise);
//   resident:  turn 2 on the first board, which never stopped (its end anchor);
//   cold:      turn 2 on a board without any cache state (the whole prefill);
//   raw:       as many bytes as the spill wrote, one file written (pwrite, fsync) and read
//              (pread) with O_DIRECT in 4 MiB blocks in the same folder: the baseline of the
//              bandwidth ratios.
// TTFT is each finished event's cache.ttft_ms, from the job's start. The answers of the three
// turn 2 are compared (same_answer). The folder is removed at the end.
// Usage: anchorage-bench-spill [--preset small] [--tokens 32768] [--max-tokens 8]
//                              [--dir /tmp/anchorage-bench-spill] [--ctx-size N]
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
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
#include "runtime/io/uring_env.hpp"
#include "runtime/board/slot_board.hpp"
#include "runtime/tiers/spill_keeper.hpp"
#include "tools/bench_common.hpp"
#include "tools/disk_bench_raw.hpp"

using namespace anchorage;
using namespace anchorage::bench;
using json = nlohmann::ordered_json;

namespace {

using clock_type = std::chrono::steady_clock;

std::string run_dir;  // removed on the way out, failures included

[[noreturn]] void die(const std::string& what) {
  log_error() << "anchorage-bench-spill: " << what;
  std::error_code ec;
  if (!run_dir.empty()) std::filesystem::remove_all(run_dir, ec);
  std::exit(1);
}

// The spill writer's part, synchronously: each job written through the writer's own env, timed
// (the write alone), then committed.
struct spill_writer {
  uring_env env;
  std::uint64_t bytes = 0;
  std::size_t blocks = 0, anchors = 0;
  double write_s = 0, commit_s = 0;

  void serve(spill_keeper& k, std::vector<spill_job_ptr>& jobs) {
    for (auto& j : jobs) {
      auto t0 = clock_type::now();
      j->results = execute_spill_write(env, k.layout(), j->image, j->plan);
      write_s += seconds_since(t0);
      t0 = clock_type::now();
      const spill_write_report r = k.committed(*j);
      commit_s += seconds_since(t0);
      if (r.failed || r.refused) die("a spill write failed: " + r.error);
      bytes += r.bytes_written;
      blocks += r.blocks_written;
      anchors += r.anchors_written;
    }
    jobs.clear();
  }
};

std::shared_ptr<spill_keeper> keeper_on(const std::string& dir, const state_layout& layout) {
  spill_options o;
  o.dir = dir;
  o.budget_bytes = 64ULL << 30;
  o.stage_bytes = 16ULL << 30;
  auto k = std::make_shared<spill_keeper>(std::make_unique<uring_env>(), layout, o);
  k->scan();
  return k;
}

// `small`-like runner options (tests/support/disk_driver.hpp), the device tiers' default budgets
// (GiBs: a 32k-token conversation of `small` is about 100 MiB).
board_runner_options runner_options(std::shared_ptr<spill_keeper> spill) {
  board_runner_options o;
  o.decode_block = 2;
  o.spill = std::move(spill);
  return o;
}

// One request run to its end on `b`: its finished event. Spills an eviction stages (none is
// expected: one conversation) are written and committed, untimed.
stream_event run_turn(slot_board& b, const std::vector<token_id>& prompt, long max_tokens,
                      const std::string& id) {
  board_job j;
  j.id = id;
  j.route = request_kind::completion;
  j.session_key = "bench";
  j.prompt.assign(prompt.begin(), prompt.end());
  j.sampling.temperature = 0;
  j.sampling.max_tokens = max_tokens;
  spill_writer side;
  std::optional<stream_event> done;
  auto take = [&](slot_events& s) {
    for (auto& ev : s.events.events) {
      if (ev.what == stream_event::kind::failed) die(id + " failed: " + ev.error.message);
      if (ev.what == stream_event::kind::finished) done = ev;
    }
    if (b.spill() && !s.events.spill_writes.empty()) side.serve(*b.spill(), s.events.spill_writes);
  };
  j.received_ns = steady_ns();
  slot_events first = b.start(std::move(j));
  take(first);
  while (b.wants_step())
    for (auto& s : b.step()) take(s);
  if (!done) die(id + " never finished");
  log_info() << id << ": source " << to_string(done->cache.source) << ", ttft " << done->cache.ttft_ms
             << " ms";
  return *done;
}

json turn_json(const stream_event& e) {
  return {{"ttft_ms", e.cache.ttft_ms},
          {"source", to_string(e.cache.source)},
          {"resumed_at", e.cache.resumed_at},
          {"prefilled_tokens", e.cache.prefilled_tokens}};
}

double gbps(double bytes, double s) { return s > 0 ? bytes / s / 1e9 : 0.0; }

// The raw O_DIRECT baseline: `n` bytes as one file in `dir`, written then read; seconds each.
std::pair<double, double> raw_baseline(const std::string& dir, std::size_t n) {
  using namespace anchorage::raw_io;
  aligned_bytes src = aligned_alloc_bytes(round_up(n)), dst = aligned_alloc_bytes(round_up(n));
  if (!src || !dst) die("out of memory for the raw baseline");
  fill_random(src.get(), round_up(n), 0x9E3779B97F4A7C15ULL);
  const std::string path = (std::filesystem::path(dir) / "raw-baseline").string();
  auto t0 = clock_type::now();
  if (!raw_write(path, src.get(), n)) die("raw O_DIRECT write failed: " + path);
  const double w = seconds_since(t0);
  t0 = clock_type::now();
  if (!raw_read(path, dst.get(), n)) die("raw O_DIRECT read failed: " + path);
  const double r = seconds_since(t0);
  std::filesystem::remove(path);
  return {w, r};
}

}  // namespace

int main(int argc, char** argv) {
  select_blas_core(argv);
  engine_options eo;
  eo.preset = "small";
  std::size_t tokens = 32768;
  long max_tokens = 8;
  std::string root = "/tmp/anchorage-bench-spill";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--tokens")
      tokens = std::stoul(v);
    else if (a == "--max-tokens")
      max_tokens = std::stol(v);
    else if (a == "--dir")
      root = v;
    else if (!eo.parse(a, v))
      die("unknown argument " + a);
  }
  constexpr std::size_t new_tokens = 64;
  model_config c = eo.config();
  if (!eo.ctx_size) {  // room for both turns, whole grid lines
    const std::size_t need = tokens + new_tokens + 2 * static_cast<std::size_t>(max_tokens) + 1;
    const std::size_t g = static_cast<std::size_t>(c.grid);
    c.ctx_size = static_cast<int>((need + g - 1) / g * g);
  }
  const tensor_map weights = random_weights(c, eo.weights_seed);
  auto fresh = [&] { return std::make_shared<engine>(c, weights, eo.backend()); };
  const std::string dir = (std::filesystem::path(root) / ("run-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  run_dir = dir;
  const bool o_direct = raw_io::o_direct_accepted(dir);
  if (!o_direct) die("the file system under " + dir + " refuses O_DIRECT: no raw baseline");

  // Turn 1, the stop's spill, and turn 2 on the board that never stopped.
  const auto p1 = prose(tokens, 1);
  std::vector<token_id> p2;
  std::size_t rows = 0;
  spill_writer writer;
  double stage_s = 0;
  stream_event resident;
  {
    auto e = fresh();
    const state_layout layout = e->layout();
    auto k1 = keeper_on(dir, layout);
    slot_board a({e}, runner_options(k1));
    log_info() << "turn 1: " << tokens << " tokens cold (" << c.preset << ")";
    run_turn(a, p1, max_tokens, "t1");
    p2 = a.runner(0).tiers().resident().tokens();
    rows = p2.size();
    const auto more = prose(new_tokens, 2);
    p2.insert(p2.end(), more.begin(), more.end());
    const auto t0 = clock_type::now();
    auto jobs = a.spill_for_stop();
    stage_s = seconds_since(t0);
    if (jobs.empty()) die("the planned stop staged no spill");
    writer.serve(*k1, jobs);
    log_info() << "spill: " << writer.bytes << " bytes in " << writer.blocks << " blocks, " << writer.write_s
               << " s";
    resident = run_turn(a, p2, max_tokens, "t2-resident");
  }

  // The restart: a new keeper on the folder, a new board on a fresh engine.
  auto e2 = fresh();
  auto k2 = keeper_on(dir, e2->layout());
  if (k2->store().manifest_count() != 1) die("the restarted keeper found no spilled conversation");
  auto t0 = clock_type::now();
  auto b = std::make_unique<slot_board>(std::vector<std::shared_ptr<engine>>{e2}, runner_options(k2));
  const double read_back_s = seconds_since(t0);
  if (b->runner(0).tiers().resident().tokens().size() != rows)
    die("the new board did not read the conversation back");
  const spill_transfer last_read =
      k2->stats().last_read;  // spill_store::read_verified alone, timed by the keeper
  const double read_bytes = static_cast<double>(last_read.bytes), read_s = last_read.seconds;
  const stream_event spill = run_turn(*b, p2, max_tokens, "t2-spill");
  b.reset();
  e2.reset();
  if (spill.cache.source != cache_source::spill)
    die(std::string("turn 2 after the restart came from ") + to_string(spill.cache.source) +
        ", not the spill");

  stream_event cold;
  {
    slot_board cb({fresh()}, runner_options(nullptr));
    log_info() << "cold: " << p2.size() << " tokens";
    cold = run_turn(cb, p2, max_tokens, "t2-cold");
  }

  log_info() << "raw O_DIRECT: " << writer.bytes << " bytes";
  const auto [raw_w, raw_r] = raw_baseline(dir, static_cast<std::size_t>(writer.bytes));
  k2.reset();
  std::filesystem::remove_all(dir);
  std::error_code ec;
  std::filesystem::remove(root, ec);  // only when empty

  const double bytes = static_cast<double>(writer.bytes);
  const double spill_w = gbps(bytes, writer.write_s), spill_r = gbps(read_bytes, read_s);
  const double raw_wg = gbps(bytes, raw_w), raw_rg = gbps(bytes, raw_r);
  json out;
  out["preset"] = c.preset;
  out["tokens"] = tokens;
  out["rows"] = rows;
  out["turn2_tokens"] = p2.size();
  out["spill"] = json({{"bytes", writer.bytes},
                       {"blocks", writer.blocks},
                       {"anchors", writer.anchors},
                       {"stage_ms", stage_s * 1e3},
                       {"write_s", writer.write_s},
                       {"commit_ms", writer.commit_s * 1e3},
                       {"write_gbps", spill_w},
                       {"read_bytes", read_bytes},
                       {"read_s", read_s},
                       {"read_gbps", spill_r},
                       {"read_back_ms", read_back_s * 1e3}});
  out["spill"].update(turn_json(spill));
  out["resident"] = turn_json(resident);
  out["cold"] = turn_json(cold);
  out["raw"] = {{"write_gbps", raw_wg}, {"read_gbps", raw_rg}, {"write_s", raw_w}, {"read_s", raw_r}};
  const double restart_ms = read_back_s * 1e3 + spill.cache.ttft_ms;
  out["ratios"] = {{"write", raw_wg > 0 ? spill_w / raw_wg : 0.0},
                   {"read", raw_rg > 0 ? spill_r / raw_rg : 0.0},
                   {"ttft_cold_over_spill", cold.cache.ttft_ms / spill.cache.ttft_ms},
                   {"ttft_spill_over_resident", spill.cache.ttft_ms / resident.cache.ttft_ms},
                   {"ttft_cold_over_read_back_and_spill", cold.cache.ttft_ms / restart_ms}};
  out["same_answer"] =
      spill.output.content == resident.output.content && spill.output.content == cold.output.content;
  std::cout << out.dump(2) << "\n";
  return 0;
}
