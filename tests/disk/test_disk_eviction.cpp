// The disk tier's budget and eviction policy under a manual clock: lifetime, value order, the
// daily halving, chains evicted with their descendants, the free-space floor.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/disk/disk_eviction.hpp"

using namespace anchorage;
using ids = std::vector<std::uint64_t>;

namespace {

constexpr std::int64_t day = 24 * 3600;

eviction_entry entry(std::uint64_t bytes, std::uint64_t tokens, std::uint64_t hits, std::int64_t last_use_s,
                     std::optional<std::uint64_t> parent = {}) {
  eviction_entry e;
  e.bytes = bytes;
  e.tokens_saved = tokens;
  e.hits = hits;
  e.last_use_s = last_use_s;
  e.parent = parent;
  return e;
}

// A small budget and no floor unless a test sets one.
disk_eviction_options small(std::uint64_t budget, std::uint64_t floor = 0) {
  disk_eviction_options o;
  o.budget_bytes = budget;
  o.min_free_bytes = floor;
  return o;
}

}  // namespace

TEST_CASE("disk eviction defaults follow the flags", "[eviction]") {
  disk_eviction_options o;
  CHECK(o.budget_bytes == disk_budget_bytes_from_gb(50));
  CHECK(o.lifetime_s == 7 * day);
  CHECK(disk_budget_bytes_from_gb(1.5) == (3ULL << 29));
}

TEST_CASE("disk eviction keeps everything within budget, floor and lifetime", "[eviction]") {
  manual_clock clock(1000 * day);
  disk_eviction policy(clock, small(1000, 100));
  REQUIRE(policy.add(1, entry(300, 10, 0, clock.now_s())));
  REQUIRE(policy.add(2, entry(300, 10, 0, clock.now_s() - 6 * day)));
  REQUIRE(policy.add(3, entry(400, 10, 0, clock.now_s(), 1)));
  CHECK(policy.held_bytes() == 1000);
  CHECK(policy.plan_evictions(100).empty());
  CHECK(policy.plan_evictions(1ULL << 40).empty());
  CHECK(policy.size() == 3);
}

TEST_CASE("disk eviction expires entries unused longer than the lifetime", "[eviction]") {
  manual_clock clock(0);
  disk_eviction policy(clock, small(1ULL << 40));
  REQUIRE(policy.add(7, entry(100, 1000, 5, 0)));
  REQUIRE(policy.add(3, entry(100, 1000, 5, 0)));
  REQUIRE(policy.add(9, entry(100, 1000, 5, 0)));
  clock.advance(2 * day);
  REQUIRE(policy.touch(9));
  CHECK(policy.find(9)->hits == 6);
  CHECK(policy.find(9)->last_use_s == 2 * day);

  clock.set(7 * day);  // exactly the lifetime: not yet "longer than"
  CHECK(policy.plan_evictions(1ULL << 40).empty());
  clock.advance(1);
  // Both expired, same last use: lower id first. Entry 9 was used two days later and stays.
  CHECK(policy.plan_evictions(1ULL << 40) == ids{3, 7});
  clock.set(9 * day + 1);
  CHECK(policy.plan_evictions(1ULL << 40) == ids{3, 7, 9});
}

TEST_CASE("disk eviction evicts the least valuable first while over budget", "[eviction]") {
  manual_clock clock(10 * day);
  const std::int64_t now = clock.now_s();
  disk_eviction policy(clock, small(250));
  // value = (hits + 1) × tokens / bytes
  REQUIRE(policy.add(1, entry(100, 400, 0, now)));  // 4
  REQUIRE(policy.add(2, entry(100, 100, 0, now)));  // 1
  REQUIRE(policy.add(3, entry(100, 100, 2, now)));  // 3
  REQUIRE(policy.add(4, entry(100, 200, 0, now)));  // 2
  CHECK(policy.value(2) == Approx(1.0));
  CHECK(policy.value(3) == Approx(3.0));
  // 400 held against 250: two must go, the least valuable first.
  CHECK(policy.plan_evictions(1ULL << 40) == ids{2, 4});
  // The plan changes nothing; the caller removes what it deleted.
  CHECK(policy.size() == 4);
  CHECK(policy.remove(2) == ids{2});
  CHECK(policy.remove(4) == ids{4});
  CHECK(policy.held_bytes() == 200);
  CHECK(policy.plan_evictions(1ULL << 40).empty());

  SECTION("hits raise an entry's value") {
    REQUIRE(policy.add(5, entry(100, 100, 0, now)));  // 1, the least valuable
    CHECK(policy.plan_evictions(1ULL << 40) == ids{5});
    REQUIRE(policy.touch(5));
    REQUIRE(policy.touch(5));
    REQUIRE(policy.touch(5));  // 4 × 100 / 100 = 4; entry 3 (value 3) is now the cheapest
    CHECK(policy.plan_evictions(1ULL << 40) == ids{3});
  }
}

TEST_CASE("disk eviction breaks ties by older last use, then lower id", "[eviction]") {
  manual_clock clock(5 * day);
  disk_eviction policy(clock, small(100));
  // Equal values and no full day unused by any of them.
  REQUIRE(policy.add(30, entry(100, 100, 0, 5 * day - 10)));
  REQUIRE(policy.add(20, entry(100, 100, 0, 5 * day - 50)));
  REQUIRE(policy.add(10, entry(100, 100, 0, 5 * day - 10)));
  REQUIRE(policy.add(40, entry(100, 100, 0, 5 * day - 10)));
  CHECK(policy.plan_evictions(1ULL << 40) == ids{20, 10, 30});
}

TEST_CASE("disk eviction halves the value for every full day unused", "[eviction]") {
  manual_clock clock(0);
  disk_eviction policy(clock, small(100));
  REQUIRE(policy.add(1, entry(100, 100, 1, 0)));  // base 2, last used at 0
  clock.set(day * 3 / 4);
  REQUIRE(policy.add(2, entry(100, 150, 0, clock.now_s())));  // base 1.5, last used at 0.75 day

  clock.set(day * 9 / 10);  // no full day for either: 1.5 < 2
  CHECK(policy.value(1) == Approx(2.0));
  CHECK(policy.plan_evictions(1ULL << 40) == ids{2});

  clock.set(day * 3 / 2);  // entry 1 has one full day (2 → 1), entry 2 none (1.5)
  CHECK(policy.value(1) == Approx(1.0));
  CHECK(policy.value(2) == Approx(1.5));
  CHECK(policy.plan_evictions(1ULL << 40) == ids{1});

  clock.set(3 * day);  // 2 / 8 = 0.25 against 1.5 / 4 = 0.375
  CHECK(policy.value(1) == Approx(0.25));
  CHECK(policy.value(2) == Approx(0.375));
  CHECK(policy.plan_evictions(1ULL << 40) == ids{1});
}

TEST_CASE("disk eviction takes an entry's descendants with it", "[eviction]") {
  manual_clock clock(100 * day);
  const std::int64_t now = clock.now_s();
  disk_eviction policy(clock, small(1000));
  // A chunk chain 1 ← 2 ← 3, an anchor 10 that needs chunk 2, and an unrelated chunk 20.
  REQUIRE(policy.add(1, entry(200, 10, 0, now)));  // cheapest: 0.05
  REQUIRE(policy.add(2, entry(200, 1000, 9, now, 1)));
  REQUIRE(policy.add(3, entry(200, 1000, 9, now, 2)));
  REQUIRE(policy.add(10, entry(300, 1000, 9, now, 2)));
  REQUIRE(policy.add(20, entry(200, 100, 0, now)));           // 0.5
  CHECK(policy.add(11, entry(100, 1, 0, now, 99)) == false);  // unknown parent
  CHECK(policy.add(20, entry(100, 1, 0, now)) == false);      // id taken
  CHECK(policy.add(12, entry(0, 1, 0, now)) == false);        // no bytes
  CHECK(policy.held_bytes() == 1100);

  // 100 over: evicting chunk 1 frees its whole chain, deepest first, and 20 stays.
  CHECK(policy.plan_evictions(1ULL << 40) == ids{3, 10, 2, 1});

  SECTION("an expired parent takes its recently used descendants") {
    clock.advance(8 * day);
    for (auto id : {2, 3, 10, 20}) REQUIRE(policy.touch(static_cast<std::uint64_t>(id)));
    CHECK(policy.plan_evictions(1ULL << 40) == ids{3, 10, 2, 1});
  }
  SECTION("removing an entry removes its descendants") {
    CHECK(policy.remove(2) == ids{3, 10, 2});
    CHECK(policy.held_bytes() == 400);
    CHECK(policy.remove(3).empty());
    REQUIRE(policy.add(4, entry(200, 1000, 9, now, 1)));  // chunk 1 may grow a new chain
    CHECK(policy.remove(1) == ids{4, 1});
    CHECK(policy.size() == 1);
  }
}

TEST_CASE("disk eviction honours the free-space floor under the budget", "[eviction]") {
  manual_clock clock(day);
  const std::int64_t now = clock.now_s();
  disk_eviction policy(clock, small(1ULL << 30, 500));
  REQUIRE(policy.add(1, entry(200, 100, 0, now)));  // 0.5
  REQUIRE(policy.add(2, entry(200, 400, 0, now)));  // 2
  REQUIRE(policy.add(3, entry(200, 200, 0, now)));  // 1
  // Far under the budget, but the file system has 150 free of the 500 to leave: 350 short.
  CHECK(policy.plan_evictions(150) == ids{1, 3});
  CHECK(policy.plan_evictions(350) == ids{1});
  CHECK(policy.plan_evictions(500).empty());
  // Evicting everything cannot reach the floor: the plan stops when the index is empty.
  CHECK(policy.plan_evictions(0) == ids{1, 3, 2});
}
