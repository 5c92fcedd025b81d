// The session spill through the board's work (issue 14), without actors: a planned stop spills
// a slot's conversation and the next start reads it back before its first request, so the next
// turn resumes with source spill at its end anchor from the very bytes an engine that never
// stopped holds; an eviction by another session spills what the park cannot hold, and that
// session's next turn comes back from the spill with the answer of a server that ran it alone;
// re-spilling writes only what changed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "runtime/io/uring_env.hpp"
#include "runtime/board/slot_board.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/disk_fixture.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/fault_env.hpp"
#include "tests/support/spill_board.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// The next turn of the conversation slot 0 holds: its tokens and `n` more.
std::vector<token_id> next_turn(const slot_board& b, std::size_t n, std::uint64_t seed) {
  auto t = b.runner(0).tiers().resident().tokens();
  const auto more = test_tokens(n, seed);
  t.insert(t.end(), more.begin(), more.end());
  return t;
}

bool same(const snapshot& a, const snapshot& b) {
  return a.length == b.length && a.sections == b.sections && a.views == b.views;
}

std::size_t count_files(const std::string& dir, const std::string& ext) {
  std::size_t n = 0;
  if (!std::filesystem::exists(dir)) return 0;
  for (auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.is_regular_file() && f.path().extension() == ext) ++n;
  return n;
}

// A board of `engines` with a spill on `dir`, the writer's part and the log: what most cases set up.
struct spilling {
  std::shared_ptr<spill_keeper> k;
  slot_board a;
  spill_driver w;
  board_run log;
  spilling(std::vector<std::shared_ptr<engine>> engines, const std::string& dir)
      : k(keeper_on(dir, engines.front()->layout())), a(std::move(engines), with_spill(k)) {}
  static board_runner_options with_spill(std::shared_ptr<spill_keeper> keeper) {
    board_runner_options o = small_runner_options();
    o.spill = std::move(keeper);
    return o;
  }
};

}  // namespace

TEST_CASE("spill: a planned stop and a new start resume the next turn from the spill, bit for bit",
          "[spill][tiers][exact]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-restart");
  board_runner_options o = small_runner_options();
  auto k1 = keeper_on(dir.str(), shared_engine(c)->layout());
  o.spill = k1;
  slot_board a({shared_engine(c)}, o);
  spill_driver w;
  board_run log;
  const auto p1 = test_tokens(static_cast<std::size_t>(3 * c.grid + 7), 801);
  run_all(a, log, &w, a.start(job_of(p1, 6, "t1", "A")));
  const auto p2 = next_turn(a, 21, 802);
  run_all(a, log, &w, a.start(job_of(p2, 6, "t2", "A")));
  REQUIRE(log.finished.at("t2").cache.source == cache_source::end);
  // The stop: the resident conversation spilled and indexed.
  auto jobs = a.spill_for_stop();
  REQUIRE(jobs.size() == 1);
  w.serve(*k1, jobs);
  REQUIRE(w.reports.size() == 1);
  CHECK_FALSE(w.reports[0].failed);
  CHECK(w.reports[0].blocks_written > 0);
  const std::size_t rows = a.runner(0).tiers().resident().tokens().size();
  const snapshot before = state_bytes(a.runner(0).slot0().cache_state(), rows);

  // A new process: a fresh engine, a fresh keeper on the same folder; the board reads the
  // conversation back before any request.
  auto k2 = keeper_on(dir.str(), shared_engine(c)->layout());
  REQUIRE(k2->store().manifest_count() == 1);
  board_runner_options o2 = small_runner_options();
  o2.spill = k2;
  slot_board b({shared_engine(c)}, o2);
  const auto& r = b.runner(0).tiers().resident();
  CHECK(r.tokens() == a.runner(0).tiers().resident().tokens());
  CHECK(r.taint() == a.runner(0).tiers().resident().taint());
  CHECK(r.has_end_anchor());
  CHECK(r.end_position() == rows);
  CHECK(b.runner(0).slot0().length() == rows);
  CHECK(same(state_bytes(b.runner(0).slot0().cache_state(), rows), before));

  // The next turn on both: the restarted one from the spill, the other from its end anchor;
  // the same tokens and the same state, bit for bit.
  const auto p3 = next_turn(a, 17, 803);
  REQUIRE(next_turn(b, 17, 803) == p3);
  board_run log_b;
  run_all(a, log, &w, a.start(job_of(p3, 8, "t3", "A")));
  run_all(b, log_b, &w, b.start(job_of(p3, 8, "t3", "A")));
  const stream_event& never = log.finished.at("t3");
  const stream_event& back = log_b.finished.at("t3");
  CHECK(never.cache.source == cache_source::end);
  CHECK(back.cache.source == cache_source::spill);
  CHECK(back.cache.resumed_at == static_cast<long>(rows));
  CHECK(back.cache.prefilled_tokens == never.cache.prefilled_tokens);
  CHECK(back.output.content == never.output.content);
  CHECK(back.ledger.source == cache_source::spill);
  const std::size_t n3 = a.runner(0).slot0().length();
  REQUIRE(b.runner(0).slot0().length() == n3);
  CHECK(same(state_bytes(b.runner(0).slot0().cache_state(), n3),
             state_bytes(a.runner(0).slot0().cache_state(), n3)));
  CHECK(k2->stats().hits == 1);
}

TEST_CASE("spill: re-spilling an unchanged conversation writes no block, a grown one at most ceil(d/grid)+1",
          "[spill][tiers]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-content");
  spilling s({shared_engine(c)}, dir.str());
  auto& [k, a, w, log] = s;
  run_all(a, log, &w,
          a.start(job_of(test_tokens(static_cast<std::size_t>(4 * c.grid + 3), 811), 5, "t1", "A")));
  auto jobs = a.spill_for_stop();
  w.serve(*k, jobs);
  REQUIRE(w.reports.size() == 1);
  const std::size_t first = w.reports[0].blocks_written;
  CHECK(first == (a.runner(0).tiers().resident().tokens().size() + c.grid - 1) / c.grid);
  const std::size_t blocks_on_disk = count_files(dir.str(), ".blk");
  CHECK(blocks_on_disk == first);
  // Unchanged: nothing at all is written, not even the manifest.
  jobs = a.spill_for_stop();
  for (auto& j : jobs) CHECK(j->plan.files.empty());
  w.serve(*k, jobs);
  REQUIRE(w.reports.size() == 2);
  CHECK(w.reports[1].blocks_written == 0);
  CHECK(w.reports[1].bytes_written == 0);
  CHECK(count_files(dir.str(), ".blk") == blocks_on_disk);
  // A turn that grows it by d tokens.
  const std::size_t n0 = a.runner(0).tiers().resident().tokens().size();
  run_all(a, log, &w, a.start(job_of(next_turn(a, static_cast<std::size_t>(c.grid + 5), 812), 5, "t2", "A")));
  REQUIRE(log.finished.at("t2").cache.source == cache_source::end);
  const std::size_t d = a.runner(0).tiers().resident().tokens().size() - n0;
  jobs = a.spill_for_stop();
  w.serve(*k, jobs);
  REQUIRE(w.reports.size() == 3);
  CHECK(w.reports[2].blocks_written >= 1);
  CHECK(w.reports[2].blocks_written <= (d + c.grid - 1) / c.grid + 1);
  CHECK(w.reports[2].blocks_present >= n0 / c.grid);
  // The earlier spill's last (partial) block is no longer named: gone.
  CHECK(k->store().manifest_count() == 1);
  CHECK(count_files(dir.str(), ".blk") == k->store().block_count());
}

TEST_CASE(
    "spill: another session's request evicts a conversation the park cannot hold, it comes back from "
    "the spill with the answer of a server that ran it alone",
    "[spill][tiers][exact]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-evict");
  auto k = keeper_on(dir.str(), shared_engine(c)->layout(), static_cast<std::size_t>(2 * c.grid));
  slot_board s({shared_engine(c)}, evicting_options(k));
  spill_driver w;
  board_run log;
  const auto a1 = test_tokens(static_cast<std::size_t>(3 * c.grid + 11), 821);
  run_all(s, log, &w, s.start(job_of(a1, 6, "a1", "A")));
  const auto a2 = next_turn(s, 13, 822);
  run_all(s, log, &w, s.start(job_of(a2, 6, "a2", "A")));
  REQUIRE(log.finished.at("a2").cache.source == cache_source::end);
  const auto a_rows = s.runner(0).tiers().resident().tokens();
  // B replaces A's rows: A is spilled first.
  run_all(s, log, &w,
          s.start(job_of(test_tokens(static_cast<std::size_t>(2 * c.grid + 9), 823), 6, "b1", "B")));
  REQUIRE(w.reports.size() == 1);
  CHECK_FALSE(w.reports[0].failed);
  REQUIRE(k->store().manifest_count() == 1);
  CHECK(s.runner(0).tiers().resident().tokens() != a_rows);
  // A's next turn: from the spill, at its end anchor.
  auto a3 = a_rows;
  const auto more = test_tokens(19, 824);
  a3.insert(a3.end(), more.begin(), more.end());
  run_all(s, log, &w, s.start(job_of(a3, 8, "a3", "A")));
  const stream_event& got = log.finished.at("a3");
  CHECK(got.cache.source == cache_source::spill);
  CHECK(got.cache.resumed_at == static_cast<long>(a_rows.size()));
  // A server that ran only A.
  board_runner_options plain = small_runner_options();
  slot_board ref({shared_engine(c)}, plain);
  board_run rlog;
  run_all(ref, rlog, nullptr, ref.start(job_of(a1, 6, "a1", "A")));
  run_all(ref, rlog, nullptr, ref.start(job_of(a2, 6, "a2", "A")));
  REQUIRE(ref.runner(0).tiers().resident().tokens() == a_rows);
  run_all(ref, rlog, nullptr, ref.start(job_of(a3, 8, "a3", "A")));
  const stream_event& want = rlog.finished.at("a3");
  CHECK(want.cache.source == cache_source::end);
  CHECK(got.output.content == want.output.content);
  const std::size_t n = ref.runner(0).slot0().length();
  REQUIRE(s.runner(0).slot0().length() == n);
  CHECK(same(state_bytes(s.runner(0).slot0().cache_state(), n),
             state_bytes(ref.runner(0).slot0().cache_state(), n)));
  // B, the one in place when A came back, was set aside in turn (spilled: the park holds nothing).
  CHECK(w.reports.size() == 2);
}

TEST_CASE("spill: a damaged block is never read back, the slot starts empty and the turn is cold",
          "[spill][tiers]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-damage");
  std::vector<token_id> p2;
  std::string cold_answer;
  {
    spilling s({shared_engine(c)}, dir.str());
    auto& [k, a, w, log] = s;
    run_all(a, log, &w,
            a.start(job_of(test_tokens(static_cast<std::size_t>(3 * c.grid), 831), 5, "t1", "A")));
    p2 = next_turn(a, 9, 832);
    auto jobs = a.spill_for_stop();
    w.serve(*k, jobs);
    REQUIRE(w.reports.size() == 1);
  }
  // One bit of one block flipped on disk.
  REQUIRE(flip_a_block_bit(dir.str()));
  board_runner_options o = small_runner_options();
  auto k = keeper_on(dir.str(), shared_engine(c)->layout());
  o.spill = k;
  slot_board b({shared_engine(c)}, o);
  CHECK(b.runner(0).tiers().resident().tokens().empty());
  CHECK(b.runner(0).slot0().length() == 0);
  CHECK(k->store().manifest_count() == 0);
  board_run log;
  run_all(b, log, nullptr, b.start(job_of(p2, 5, "t2", "A")));
  CHECK(log.finished.at("t2").cache.source == cache_source::cold);
  slot_board ref({shared_engine(c)}, small_runner_options());
  board_run rlog;
  run_all(ref, rlog, nullptr, ref.start(job_of(p2, 5, "t2", "A")));
  CHECK(log.finished.at("t2").output.content == rlog.finished.at("t2").output.content);
}

TEST_CASE("spill: a kill -9 during a spill leaves the previous one, which the next start uses",
          "[spill][tiers]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-kill");
  std::vector<token_id> p2, p3;
  std::size_t first_rows = 0;
  std::string never_answer;
  {
    spilling s({shared_engine(c)}, dir.str());
    auto& [k, a, w, log] = s;
    run_all(a, log, &w,
            a.start(job_of(test_tokens(static_cast<std::size_t>(3 * c.grid + 5), 841), 5, "t1", "A")));
    auto jobs = a.spill_for_stop();
    w.serve(*k, jobs);  // the first spill, whole
    first_rows = a.runner(0).tiers().resident().tokens().size();
    p2 = next_turn(a, 11, 842);
    run_all(a, log, &w, a.start(job_of(p2, 5, "t2", "A")));
    never_answer = log.finished.at("t2").output.content;
    // The second spill: its new blocks reach the disk, then the process dies writing the manifest.
    jobs = a.spill_for_stop();
    REQUIRE(jobs.size() == 1);
    spill_job& j = *jobs[0];
    REQUIRE(j.plan.files.size() >= 2);
    REQUIRE(j.plan.files.back().what == spill_file_job::kind::manifest);
    spill_write_plan blocks = j.plan;
    blocks.files.pop_back();
    uring_env env;
    for (const auto& r : execute_spill_write(env, k->layout(), j.image, blocks)) REQUIRE(r.ok);
    fault_env dying(env);
    dying.crash_before_rename();
    spill_write_plan manifest = j.plan;
    manifest.files = {j.plan.files.back()};
    CHECK_FALSE(execute_spill_write(dying, k->layout(), j.image, manifest).front().ok);
    CHECK(count_files(dir.str(), ".tmp") == 1);
    // No commit: the process is gone.
  }
  board_runner_options o = small_runner_options();
  auto k = keeper_on(dir.str(), shared_engine(c)->layout());
  CHECK(count_files(dir.str(), ".tmp") == 0);
  CHECK(count_files(dir.str(), ".blk") == k->store().block_count());
  o.spill = k;
  slot_board b({shared_engine(c)}, o);
  REQUIRE(b.runner(0).tiers().resident().tokens().size() == first_rows);
  // Turn 2 again: from the first spill's end anchor, the answer the server that never died gave.
  board_run log;
  run_all(b, log, nullptr, b.start(job_of(p2, 5, "t2", "A")));
  CHECK(log.finished.at("t2").cache.source == cache_source::spill);
  CHECK(log.finished.at("t2").cache.resumed_at == static_cast<long>(first_rows));
  CHECK(log.finished.at("t2").output.content == never_answer);
}

TEST_CASE("spill: a full disk during a spill is a soft failure, the earlier spill stays and serving goes on",
          "[spill][tiers]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-enospc");
  spilling s({shared_engine(c)}, dir.str());
  auto& [k, a, w, log] = s;
  run_all(a, log, &w,
          a.start(job_of(test_tokens(static_cast<std::size_t>(2 * c.grid + 5), 851), 5, "t1", "A")));
  auto jobs = a.spill_for_stop();
  w.serve(*k, jobs);
  const auto before = k->store().find(k->store().manifests().front()->id)->tokens;
  run_all(a, log, &w, a.start(job_of(next_turn(a, 9, 852), 5, "t2", "A")));
  jobs = a.spill_for_stop();
  REQUIRE(jobs.size() == 1);
  fault_env full(w.env);
  full.no_space_after(0);
  jobs[0]->results = execute_spill_write(full, k->layout(), jobs[0]->image, jobs[0]->plan);
  const spill_write_report r = k->committed(*jobs[0]);
  CHECK(r.failed);
  CHECK(full.counters().no_space >= 1);
  REQUIRE(k->store().manifest_count() == 1);
  CHECK(k->store().manifests().front()->tokens == before);
  CHECK(k->staged_bytes() == 0);
  CHECK(count_files(dir.str(), ".tmp") == 0);
  // Serving goes on.
  run_all(a, log, &w, a.start(job_of(next_turn(a, 7, 853), 5, "t3", "A")));
  CHECK(log.finished.at("t3").cache.source == cache_source::end);
}

TEST_CASE("spill: an engine of other weights never reads another's spill", "[spill][tiers]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-foreign");
  std::vector<token_id> p2;
  {
    spilling s({shared_engine(c)}, dir.str());
    auto& [k, a, w, log] = s;
    run_all(a, log, &w,
            a.start(job_of(test_tokens(static_cast<std::size_t>(2 * c.grid + 5), 861), 5, "t1", "A")));
    p2 = next_turn(a, 9, 862);
    auto jobs = a.spill_for_stop();
    w.serve(*k, jobs);
    REQUIRE(k->store().manifest_count() == 1);
  }
  auto other = std::shared_ptr<engine>(make_engine(c, 8).release());  // other weights: another fingerprint
  board_runner_options o = small_runner_options();
  auto k = keeper_on(dir.str(), other->layout());
  CHECK(k->store().manifest_count() == 0);
  o.spill = k;
  slot_board b({other}, o);
  CHECK(b.runner(0).tiers().resident().tokens().empty());
  board_run log;
  run_all(b, log, nullptr, b.start(job_of(p2, 5, "t2", "A")));
  CHECK(log.finished.at("t2").cache.source == cache_source::cold);
}

TEST_CASE("spill: two slots' conversations come back to their own slots after a stop",
          "[spill][tiers][slots]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-slots");
  std::map<std::size_t, std::vector<token_id>> held;
  std::map<std::size_t, std::string> session;
  {
    spilling s({shared_engine(c), shared_engine(c)}, dir.str());
    auto& [k, a, w, log] = s;
    slot_events sa =
        a.start(job_of(test_tokens(static_cast<std::size_t>(2 * c.grid + 3), 871), 4, "a1", "A"));
    const std::size_t slot_a = sa.slot;
    slot_events sb =
        a.start(job_of(test_tokens(static_cast<std::size_t>(3 * c.grid + 1), 872), 4, "b1", "B"));
    const std::size_t slot_b = sb.slot;
    REQUIRE(slot_a != slot_b);
    run_all(a, log, &w, std::move(sa));
    run_all(a, log, &w, std::move(sb));
    held[slot_a] = a.runner(slot_a).tiers().resident().tokens();
    held[slot_b] = a.runner(slot_b).tiers().resident().tokens();
    session[slot_a] = "A";
    session[slot_b] = "B";
    auto jobs = a.spill_for_stop();
    REQUIRE(jobs.size() == 2);
    w.serve(*k, jobs);
  }
  board_runner_options o = small_runner_options();
  auto k = keeper_on(dir.str(), shared_engine(c)->layout());
  REQUIRE(k->resident_manifests().size() == 2);
  o.spill = k;
  slot_board b({shared_engine(c), shared_engine(c)}, o);
  for (std::size_t s = 0; s < 2; ++s) {
    CHECK(b.runner(s).tiers().resident().tokens() == held[s]);
    // The session's next turn goes to its slot and resumes there from the spill.
    auto next = held[s];
    const auto more = test_tokens(9, 873 + s);
    next.insert(next.end(), more.begin(), more.end());
    board_run log;
    slot_events first = b.start(job_of(next, 4, "n" + std::to_string(s), session[s]));
    CHECK(first.slot == s);
    run_all(b, log, nullptr, std::move(first));
    CHECK(log.finished.at("n" + std::to_string(s)).cache.source == cache_source::spill);
  }
}

TEST_CASE("spill: the tier reads only when reading costs less than the prefill it saves", "[spill][tiers]") {
  const model_config c = test_config("tiny", 1024);
  temp_dir dir("anchorage-spill-cost");
  spilling s({shared_engine(c)}, dir.str());
  auto& [k, a, w, log] = s;
  run_all(a, log, &w,
          a.start(job_of(test_tokens(static_cast<std::size_t>(3 * c.grid + 2), 881), 4, "t1", "A")));
  auto jobs = a.spill_for_stop();
  w.serve(*k, jobs);
  const auto next = next_turn(a, 10, 882);
  const std::size_t end = a.runner(0).tiers().resident().tokens().size();
  // Unmeasured prefill: it reads. At the end anchor, via the end alignment.
  auto offer = k->offer(next, 0, 0, true, true);
  REQUIRE(offer);
  CHECK(offer->offer.source == cache_source::spill);
  CHECK(offer->offer.at == end);
  CHECK(offer->read_bytes == k->store().read_bytes(offer->id));
  // A floor at or above it: nothing to gain.
  CHECK_FALSE(k->offer(next, end, 0, true, true));
  // A prefill faster than the read: declined.
  const double fast = static_cast<double>(end) / (offer->read_s / 2);
  CHECK_FALSE(k->offer(next, 0, fast, true, true));
  const double slow = static_cast<double>(end) / (offer->read_s * 2);
  CHECK(k->offer(next, 0, slow, true, true));
  // Without the end anchor: its newest grid anchor at or below what the prompt shares.
  auto grid = k->offer(next, 0, 0, false, true);
  REQUIRE(grid);
  CHECK(grid->offer.at == (end / c.grid) * c.grid);
  CHECK(grid->offer.exact);
  // A prompt that parts early gets the grid anchor below where it parts.
  auto parted = next;
  parted[static_cast<std::size_t>(c.grid) + 3] ^= 1;
  auto low = k->offer(parted, 0, 0, true, true);
  REQUIRE(low);
  CHECK(low->offer.at == static_cast<std::size_t>(c.grid));
  CHECK(low->offer.served == parted);
}
