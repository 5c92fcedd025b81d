#pragma once
// A board with a session spill in tests, driven synchronously: a keeper on a folder (scanned, as a
// server's start builds it), the spill writer's part (each staged job written and committed at
// once), and a loop that steps every slot until none wants a step, keeping each finished event.
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/io/uring_env.hpp"
#include "runtime/board/slot_board.hpp"
#include "runtime/tiers/spill_keeper.hpp"
#include "tests/support/disk_driver.hpp"

namespace anchorage::testing {

// One bit flipped on the medium, 5 bytes before the end of a spilled block under `dir` (the last
// one found); false when there is none.
inline bool flip_a_block_bit(const std::string& dir) {
  std::string victim;
  for (auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.path().extension() == ".blk") victim = f.path().string();
  if (victim.empty()) return false;
  std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-5, std::ios::end);
  char ch = 0;
  f.read(&ch, 1);
  ch = static_cast<char>(ch ^ 0x10);
  f.seekp(-5, std::ios::end);
  f.write(&ch, 1);
  return true;
}

// A keeper on `dir`, scanned, as a server's start builds it.
inline std::shared_ptr<spill_keeper> keeper_on(const std::string& dir, const state_layout& layout,
                                               std::size_t min_tokens = 1) {
  spill_options o;
  o.dir = dir;
  o.budget_bytes = 1ULL << 30;
  o.min_tokens = min_tokens;
  auto k = std::make_shared<spill_keeper>(std::make_unique<uring_env>(), layout, o);
  k->scan();
  return k;
}

// A runner's options where another session's request evicts the conversation in place to the
// spill: it is no guest, the park and the pin hold nothing, the store keeps no turn of it.
inline board_runner_options evicting_options(std::shared_ptr<spill_keeper> keeper) {
  board_runner_options o = small_runner_options();
  o.cache.guest_max = 0;
  o.cache.park_bytes = 1;
  o.cache.pin_bytes = 1;
  o.cache.session_cache = false;
  o.cache.prefix_cache = false;
  o.spill = std::move(keeper);
  return o;
}

// The spill writer's part, synchronous: each job written through `env` and committed.
struct spill_driver {
  uring_env env;
  std::vector<spill_write_report> reports;
  void serve(spill_keeper& k, std::vector<spill_job_ptr>& jobs) {
    for (auto& j : jobs) {
      j->results = execute_spill_write(env, k.layout(), j->image, j->plan);
      reports.push_back(k.committed(*j));
    }
    jobs.clear();
  }
};

struct board_run {
  std::map<std::string, stream_event> finished;
};

// A slot's spill read, answered at once (the spill reader's part, on the keeper's env), and what
// the slot did next.
inline void serve_spill_read(slot_board& b, slot_events& s) {
  while (s.events.spill_read) {
    spill_fetch_ptr f = std::move(s.events.spill_read);
    b.spill()->execute_here(*f);
    slot_events next = b.spill_fetched(s.slot, std::move(f));
    for (auto& ev : next.events.events) s.events.events.push_back(std::move(ev));
    for (auto& j : next.events.spill_writes) s.events.spill_writes.push_back(std::move(j));
    if (next.events.done) s.events.done = std::move(next.events.done);
    s.events.spill_read = std::move(next.events.spill_read);
  }
}

// A slot's images to encode, encoded at once (the vision encoder's part), and what the slot did
// next.
inline void serve_vision_encode(slot_board& b, slot_events& s) {
  while (s.events.vision_encode) {
    vision_encode_ptr job = std::move(s.events.vision_encode);
    execute_vision_encode(*job);
    slot_events next = b.encoded(s.slot, std::move(job));
    for (auto& ev : next.events.events) s.events.events.push_back(std::move(ev));
    for (auto& j : next.events.spill_writes) s.events.spill_writes.push_back(std::move(j));
    if (next.events.done) s.events.done = std::move(next.events.done);
    s.events.vision_encode = std::move(next.events.vision_encode);
  }
}

// Every step of every slot until none wants one; spills written as they are staged, spill reads
// answered as they are asked for.
inline void run_all(slot_board& b, board_run& log, spill_driver* w, slot_events first) {
  auto take = [&](slot_events& s) {
    serve_spill_read(b, s);
    serve_vision_encode(b, s);
    for (auto& ev : s.events.events)
      if (ev.what == stream_event::kind::finished) log.finished[ev.id] = ev;
    if (w && b.spill()) w->serve(*b.spill(), s.events.spill_writes);
  };
  take(first);
  while (b.wants_step())
    for (auto& s : b.step()) take(s);
}

}  // namespace anchorage::testing
