// Miss reasons through the board and the real session spill (docs/CACHES.md): a conversation
// another session evicted comes back from its spill with nothing missed; with its spilled block
// damaged it is prefilled cold, counted as verification_failed with every token it had held; and
// without a spill it is counted as evicted.
#include <catch2/catch.hpp>

#include "runtime/board/slot_board.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/spill_board.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

long requests_of(const cache_stats& s) {
  long n = 0;
  for (miss_reason r : all_miss_reasons)
    if (r != miss_reason::no_shared_prefix) n += s.miss_reasons[r].requests;
  return n;
}

}  // namespace

TEST_CASE(
    "board miss reasons: an evicted conversation back from the spill misses nothing, damaged it is "
    "verification_failed",
    "[board][spill][miss]") {
  const model_config c = test_config("tiny", 1024);
  const bool damaged = GENERATE(false, true);
  INFO((damaged ? "the spilled block damaged" : "the spill intact"));
  temp_dir dir("anchorage-board-miss");
  auto k = keeper_on(dir.str(), shared_engine(c)->layout(), static_cast<std::size_t>(2 * c.grid));
  slot_board s({shared_engine(c)}, evicting_options(k));
  spill_driver w;
  board_run log;
  const auto a1 = test_tokens(static_cast<std::size_t>(3 * c.grid + 11), 861);
  run_all(s, log, &w, s.start(job_of(a1, 6, "a1", "A")));
  const auto a_rows = s.runner(0).tiers().resident().tokens();
  // B replaces A's rows: A is spilled.
  auto b1 = test_tokens(static_cast<std::size_t>(2 * c.grid + 9), 862);
  if (b1.front() == a1.front()) b1.front() = static_cast<token_id>((b1.front() + 1) % 256);
  run_all(s, log, &w, s.start(job_of(b1, 6, "b1", "B")));
  REQUIRE(k->store().manifest_count() == 1);
  if (damaged) REQUIRE(flip_a_block_bit(dir.str()));
  auto a2 = a_rows;
  const auto more = test_tokens(19, 863);
  a2.insert(a2.end(), more.begin(), more.end());
  run_all(s, log, &w, s.start(job_of(a2, 4, "a2", "A")));
  const stream_event& got = log.finished.at("a2");
  const cache_stats st = s.stats();
  if (!damaged) {
    CHECK(got.cache.source == cache_source::spill);
    CHECK(requests_of(st) == 0);
  } else {
    CHECK(got.cache.source == cache_source::cold);
    CHECK(st.miss_reasons.verification_failed.requests == 1);
    CHECK(st.miss_reasons.verification_failed.tokens == static_cast<long long>(a_rows.size()));
    CHECK(requests_of(st) == 1);
  }
  CHECK(st.miss_reasons.no_shared_prefix.requests == 2);  // A's and B's first turns
}

TEST_CASE("board miss reasons: a conversation another session overwrote without a spill is evicted",
          "[board][miss]") {
  const model_config c = test_config("tiny", 1024);
  board_runner_options o = small_runner_options();
  o.cache.guest_max = 0;
  o.cache.pin_bytes = o.cache.park_bytes = 0;
  o.cache.session_cache = o.cache.prefix_cache = false;
  slot_board s({shared_engine(c)}, o);
  board_run log;
  const auto a1 = test_tokens(static_cast<std::size_t>(3 * c.grid + 11), 871);
  run_all(s, log, nullptr, s.start(job_of(a1, 6, "a1", "A")));
  const auto a_rows = s.runner(0).tiers().resident().tokens();
  auto b1 = test_tokens(static_cast<std::size_t>(4 * c.grid + 9), 872);
  if (b1.front() == a1.front()) b1.front() = static_cast<token_id>((b1.front() + 1) % 256);
  run_all(s, log, nullptr, s.start(job_of(b1, 6, "b1", "B")));
  auto a2 = a_rows;
  const auto more = test_tokens(19, 873);
  a2.insert(a2.end(), more.begin(), more.end());
  run_all(s, log, nullptr, s.start(job_of(a2, 4, "a2", "A")));
  CHECK(log.finished.at("a2").cache.source == cache_source::cold);
  const cache_stats st = s.stats();
  CHECK(st.miss_reasons.evicted.requests == 1);
  CHECK(st.miss_reasons.evicted.tokens == static_cast<long long>(a_rows.size()));
  CHECK(requests_of(st) == 1);
}
