// The durable prefix store's budget under a manual clock started at the real time (scan reads
// last use from the files' mtimes): the least valuable entry goes first, hits count, the lifetime
// holds across a restart, a chunk takes its chain with it, the entry cap refuses before evicting.
#include <catch2/catch.hpp>

#include "tests/support/disk_store_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

// ---- Eviction -------------------------------------------------------------------------------

TEST_CASE("an entry over the budget evicts the least valuable one first", "[disk]") {
  bench b;
  const std::size_t line = 2 * b.g;
  const std::uint64_t e = b.entry_bytes(line);
  std::vector<std::vector<token_id>> t;
  std::vector<std::unique_ptr<engine>> en;
  for (std::uint64_t s = 0; s < 3; ++s) {
    t.push_back(test_tokens(line + 1, 20 + s));
    en.push_back(prefilled(b.c, t.back(), line));
  }
  // Two entries fit, with less slack than any one file.
  const std::uint64_t slack = std::min<std::uint64_t>(b.cfb, b.afb(line)) / 2;
  const std::uint64_t budget = 2 * e + slack;

  auto files_of = [&](const disk_store& s, std::size_t k) {
    return std::vector<std::string>{chunk_file(s, t[k], b.g), chunk_file(s, t[k], 2 * b.g),
                                    anchor_file(s, "", t[k], line)};
  };
  auto all_there = [&](const disk_store& s, std::size_t k) {
    for (const auto& f : files_of(s, k))
      if (!exists(f)) return false;
    return true;
  };
  auto none_there = [&](const disk_store& s, std::size_t k) {
    for (const auto& f : files_of(s, k))
      if (exists(f)) return false;
    return true;
  };

  SECTION("without hits, the one unused longest goes") {
    auto store = b.open(options_in(b.dir.str(), budget));
    REQUIRE(store->store(slice(t[0], 0, line), en[0]->cache_state()));
    b.clock.advance(3 * day);  // entry 0 is now worth an eighth of a new one
    REQUIRE(store->store(slice(t[1], 0, line), en[1]->cache_state()));
    CHECK(store->total_bytes() == 2 * e);
    const long evictions0 = counter(store->stats(), "evictions");
    REQUIRE(store->store(slice(t[2], 0, line), en[2]->cache_state()));
    CHECK(store->total_bytes() <= budget);
    CHECK(store->total_bytes() == 2 * e);
    CHECK_FALSE(store->find(t[0]));
    CHECK(none_there(*store, 0));
    CHECK(store->find(t[1]));
    CHECK(all_there(*store, 1));
    CHECK(store->find(t[2]));
    CHECK(all_there(*store, 2));
    CHECK(counter(store->stats(), "evictions") == evictions0 + 3);
    CHECK(store->total_bytes() == bytes_under(b.folder()));
  }
  SECTION("a restored entry outranks an equal one without hits") {
    auto store = b.open(options_in(b.dir.str(), budget));
    REQUIRE(store->store(slice(t[0], 0, line), en[0]->cache_state()));
    b.clock.advance(day);
    REQUIRE(store->store(slice(t[1], 0, line), en[1]->cache_state()));
    // Entry 0 restored three times, now: its chunks and anchor are used as much as they are
    // recent, so entry 1 (same size, same age now, no hits) is the least valuable.
    auto scratch = make_engine(b.c);
    for (int i = 0; i < 3; ++i) {
      const auto hit = store->find(t[0]);
      REQUIRE(hit);
      const auto r = store->restore(*hit, t[0], scratch->cache_state());
      INFO(r.error().error());
      REQUIRE(bool(r));
    }
    REQUIRE(store->store(slice(t[2], 0, line), en[2]->cache_state()));
    CHECK(store->total_bytes() <= budget);
    CHECK(all_there(*store, 0));
    CHECK(none_there(*store, 1));
    CHECK(all_there(*store, 2));
    CHECK_FALSE(store->find(t[1]));
    const auto hit = store->find(t[0]);
    REQUIRE(hit);
    auto fresh = make_engine(b.c);
    const auto r = store->restore(*hit, t[0], fresh->cache_state());
    INFO(r.error().error());
    REQUIRE(bool(r));
    require_same_as_cold(*fresh, *en[0], line);
  }
}

TEST_CASE("room for a longer entry is not made by evicting the chunks it stands on", "[disk]") {
  // The entry extends an old, low-valued one: its two chunks are the least valuable files, but
  // evicting them would leave the new chunks without a parent. store() may only return false
  // when the write is refused or fails; here it fits the budget once another entry goes.
  bench b;
  const auto t = test_tokens(4 * b.g + 1, 90), v = test_tokens(2 * b.g + 1, 91);
  auto et = prefilled(b.c, t, 2 * b.g), ev = prefilled(b.c, v, 2 * b.g);
  const std::uint64_t e64 = b.entry_bytes(2 * b.g);
  const std::uint64_t slack = std::min<std::uint64_t>(b.cfb, b.afb(2 * b.g)) / 2;
  const std::uint64_t budget = 2 * e64 + slack;
  auto store = b.open(options_in(b.dir.str(), budget));
  REQUIRE(store->store(slice(t, 0, 2 * b.g), et->cache_state()));
  b.clock.advance(3 * day);
  REQUIRE(store->store(slice(v, 0, 2 * b.g), ev->cache_state()));
  et->prefill(slice(t, 2 * b.g, 4 * b.g));
  const staged_write w = stage(*et, t, "", true);
  REQUIRE(store->bytes_needed(w) == 2 * b.cfb + b.afb(4 * b.g));
  REQUIRE(store->total_bytes() + store->bytes_needed(w) > budget);  // room must be made
  const disk_write_report r = store->write(w);
  INFO(r.error);
  CHECK_FALSE(r.refused);
  CHECK_FALSE(r.failed);
  CHECK(r.anchors_written == 1);
  CHECK(store->total_bytes() <= budget);
  CHECK(store->total_bytes() == bytes_under(b.folder()));
  const auto hit = store->find(t);
  REQUIRE(hit);
  CHECK(hit->line == 4 * b.g);
  auto fresh = make_engine(b.c);
  const auto res = store->restore(*hit, t, fresh->cache_state());
  INFO(res.error().error());
  REQUIRE(bool(res));
  auto cold = prefilled(b.c, t, 4 * b.g);
  require_same_as_cold(*fresh, *cold, 4 * b.g);
}

TEST_CASE("entries unused longer than the lifetime go, last use surviving a restart", "[disk]") {
  bench b;
  const std::size_t line = 2 * b.g;
  const auto t0 = b.clock.now_s();
  const auto d = test_tokens(line + 1, 30), e = test_tokens(line + 1, 31);
  auto ed = prefilled(b.c, d, line), ee = prefilled(b.c, e, line);

  SECTION("in one process, by the clock") {
    auto store = b.open();
    REQUIRE(store->store(slice(d, 0, line), ed->cache_state()));
    b.clock.set(t0 + 6 * day);
    REQUIRE(store->store(slice(e, 0, line), ee->cache_state()));
    CHECK(store->evict_to_cap() == 0);
    b.clock.set(t0 + 7 * day + 60);
    CHECK(store->evict_to_cap() == 3);
    CHECK_FALSE(store->find(d));
    CHECK_FALSE(exists(anchor_file(*store, "", d, line)));
    CHECK_FALSE(exists(chunk_file(*store, d, b.g)));
    CHECK(store->find(e));
    CHECK(count_files(b.folder()) == 3);
    CHECK(store->total_bytes() == bytes_under(b.folder()));
  }
  SECTION("across a restart, from the files' times") {
    {
      auto store = b.open();
      REQUIRE(store->store(slice(d, 0, line), ed->cache_state()));
      REQUIRE(store->store(slice(e, 0, line), ee->cache_state()));
      // e restored six days later: its last use moves with it.
      b.clock.set(t0 + 6 * day);
      auto scratch = make_engine(b.c);
      const auto hit = store->find(e);
      REQUIRE(hit);
      REQUIRE(bool(store->restore(*hit, e, scratch->cache_state())));
    }
    b.clock.set(t0 + 5 * day);
    {
      auto store = b.open();
      CHECK(store->entries() == 2);
      CHECK(store->evict_to_cap() == 0);
    }
    b.clock.set(t0 + 8 * day);
    auto store = b.open();
    CHECK(store->entries() == 2);
    CHECK(store->evict_to_cap() == 3);
    CHECK_FALSE(store->find(d));
    CHECK(store->find(e));
    CHECK(count_files(b.folder()) == 3);
  }
}

TEST_CASE("evicting a chunk takes the longer chunks and the anchors on them", "[disk]") {
  bench b;
  const auto t = test_tokens(4 * b.g + 1);
  auto e = make_engine(b.c);
  {
    auto store = b.open();
    e->prefill(slice(t, 0, b.g));
    REQUIRE(store->store(slice(t, 0, b.g), e->cache_state(), "y"));
    e->prefill(slice(t, b.g, 2 * b.g));
    REQUIRE(store->store(slice(t, 0, 2 * b.g), e->cache_state(), "w"));
    e->prefill(slice(t, 2 * b.g, 4 * b.g));
    REQUIRE(store->store(slice(t, 0, 4 * b.g), e->cache_state()));
    REQUIRE(count_files(b.folder()) == 4 + 3);
    // Chunk 2 last used eight days ago.
    REQUIRE(b.env.set_modified_s(chunk_file(*store, t, 2 * b.g), b.clock.now_s() - 8 * day));
  }
  auto store = b.open();
  CHECK(store->entries() == 3);
  CHECK(store->evict_to_cap() == 5);  // chunks 2-4, the anchors at 64 and 128
  CHECK(files_under(b.folder()) ==
        std::vector<std::string>{"c-" + hex16(prefix_hash(t.data(), b.g)) + ".chk",
                                 "n-y/a-" + hex16(prefix_hash(t.data(), b.g)) + ".anc"});
  CHECK(store->chunk_count() == 1);
  CHECK(store->entries() == 1);
  CHECK(store->find(slice(t, 0, b.g + 1), "y"));
  CHECK_FALSE(store->find(slice(t, 0, 2 * b.g + 1), "w"));
  CHECK_FALSE(store->find(t));
  CHECK(store->total_bytes() == bytes_under(b.folder()));
}

TEST_CASE("an entry over the entry cap or the budget is refused without writing or evicting", "[disk]") {
  bench b;
  const auto a = test_tokens(4 * b.g + 1, 40), u = test_tokens(4 * b.g + 1, 41);
  auto ea = prefilled(b.c, a, 2 * b.g);
  auto eu = prefilled(b.c, u, 4 * b.g);
  const std::uint64_t e64 = b.entry_bytes(2 * b.g), e128 = b.entry_bytes(4 * b.g);

  SECTION("the entry cap") {
    // The cap lets a 64-token entry through, not a 128-token one; the budget would need the
    // first entry evicted to make room for the second.
    auto store = b.open(options_in(b.dir.str(), e64 + e128 - 1, e64));
    REQUIRE(store->store(slice(a, 0, 2 * b.g), ea->cache_state()));
    const long refusals0 = counter(store->stats(), "refusals");
    const std::uint64_t writes = b.env.counters().writes;
    CHECK_FALSE(store->store(slice(u, 0, 4 * b.g), eu->cache_state()));
    const disk_write_report r = store->write(stage(*eu, u, "", true));
    CHECK(r.refused);
    CHECK_FALSE(r.error.empty());
    CHECK(r.chunks_written == 0);
    CHECK(r.anchors_written == 0);
    CHECK(r.bytes_written == 0);
    CHECK(b.env.counters().writes == writes);
    CHECK(counter(store->stats(), "refusals") == refusals0 + 2);
    CHECK(store->find(a));
    CHECK(count_files(b.folder()) == 3);
    CHECK(store->total_bytes() == e64);
    // What the entry would add counts only the files not indexed: a's 128 over its 64.
    ea->prefill(slice(a, 2 * b.g, 4 * b.g));
    const staged_write longer = stage(*ea, a, "", true);
    CHECK(store->bytes_needed(longer) == 2 * b.cfb + b.afb(4 * b.g));
  }
  SECTION("the budget, with no cap") {
    auto store = b.open(options_in(b.dir.str(), e64 - 1));
    const std::uint64_t writes = b.env.counters().writes;
    CHECK_FALSE(store->store(slice(a, 0, 2 * b.g), ea->cache_state()));
    CHECK(b.env.counters().writes == writes);
    CHECK(count_files(b.folder()) == 0);
    CHECK(store->entries() == 0);
  }
}

TEST_CASE("writes in flight count against the budget before they are indexed", "[disk][eviction]") {
  // Two writes prepared before either is committed (the disk writer holds both): the second
  // must see the first's bytes, or both land and the disk holds more than the budget.
  bench b;
  const std::size_t line = 2 * b.g;
  auto store = b.open(options_in(b.dir.str(), b.entry_bytes(line) + b.entry_bytes(line) / 2));
  auto e1 = prefilled(b.c, test_tokens(line, 31), line);
  auto e2 = prefilled(b.c, test_tokens(line, 32), line);
  const staged_write w1 = stage(*e1, test_tokens(line, 31), "", false);
  const staged_write w2 = stage(*e2, test_tokens(line, 32), "", false);
  const disk_write_plan p1 = store->prepare(w1);
  REQUIRE_FALSE(p1.refused);
  const disk_write_plan p2 = store->prepare(w2);
  CHECK(p2.refused);
  store->commit(w1, p1, execute_disk_write(b.env, b.layout, w1, p1));
  store->commit(w2, p2, execute_disk_write(b.env, b.layout, w2, p2));
  CHECK(store->total_bytes() <= store->max_bytes());
  CHECK(bytes_under(b.folder()) <= store->max_bytes());
  // Once the first is indexed (and so evictable), the second makes room and lands.
  CHECK(store->write(w2).anchors_written == 1);
  CHECK(bytes_under(b.folder()) <= store->max_bytes());
}

TEST_CASE("limits set while the store runs evict at once: a lower budget by value, a shorter lifetime by age",
          "[disk][settings]") {
  bench b;
  const std::size_t line = 2 * b.g;
  const std::uint64_t e = b.entry_bytes(line);
  std::vector<std::vector<token_id>> t;
  for (std::uint64_t s = 0; s < 3; ++s) t.push_back(test_tokens(line + 1, 40 + s));
  auto store = b.open(options_in(b.dir.str(), 8 * e));
  for (std::size_t k = 0; k < 3; ++k) {
    auto en = prefilled(b.c, t[k], line);
    REQUIRE(store->store(slice(t[k], 0, line), en->cache_state()));
    b.clock.advance(day);  // entry 0 is the oldest, entry 2 the newest
  }
  REQUIRE(store->total_bytes() == 3 * e);
  // Entry 1 restored once, now: (1 hit + 1) x 1 against entry 2's 1 x 1/2 (a day unused) and
  // entry 0's 1 x 1/8.
  auto scratch = make_engine(b.c);
  const auto hit = store->find(t[1]);
  REQUIRE(hit);
  REQUIRE(bool(store->restore(*hit, t[1], scratch->cache_state())));
  disk_eviction_options o = store->index().eviction_options();

  SECTION("a budget for one entry keeps the most valuable one") {
    // One entry, with less slack than any one file (the policy ranks files, not entries).
    o.budget_bytes = e + std::min<std::uint64_t>(b.cfb, b.afb(line)) / 2;
    CHECK(store->set_eviction(o) == 6);  // two entries, three files each
    CHECK(store->total_bytes() == e);
    CHECK(store->max_bytes() == o.budget_bytes);
    CHECK_FALSE(store->find(t[0]));
    CHECK(store->find(t[1]));
    CHECK_FALSE(store->find(t[2]));
    CHECK(store->total_bytes() == bytes_under(b.folder()));
    CHECK(store->stats().limit_bytes == o.budget_bytes);
    // Later writes fit the new budget too: a new entry replaces the one held.
    auto en = prefilled(b.c, test_tokens(line + 1, 50), line);
    REQUIRE(store->store(slice(test_tokens(line + 1, 50), 0, line), en->cache_state()));
    CHECK(store->total_bytes() <= o.budget_bytes);
  }
  SECTION("a lifetime shorter than an entry's age removes it") {
    o.lifetime_s = day + day / 2;  // entry 0 was last used 3 days ago, entry 2 one day ago
    CHECK(store->set_eviction(o) == 3);
    CHECK_FALSE(store->find(t[0]));
    CHECK(store->find(t[1]));  // touched now
    CHECK(store->find(t[2]));
    CHECK(store->stats().lifetime_s == o.lifetime_s);
  }
  SECTION("limits that allow everything evict nothing") {
    o.budget_bytes = 100 * e;
    CHECK(store->set_eviction(o) == 0);
    CHECK(store->total_bytes() == 3 * e);
  }
}

TEST_CASE("the operator's list of anchors: most valuable first, with the value, hits and age eviction sees",
          "[disk]") {
  bench b;
  const std::size_t line = 2 * b.g;
  const std::uint64_t e = b.entry_bytes(line);
  auto store = b.open(options_in(b.dir.str(), 8 * e));
  std::vector<std::vector<token_id>> t;
  for (std::uint64_t s = 0; s < 3; ++s) {
    t.push_back(test_tokens(line + 1, 70 + s));
    auto en = prefilled(b.c, t.back(), line);
    REQUIRE(store->store(slice(t.back(), 0, line), en->cache_state()));
    b.clock.advance(day + 5);
  }
  auto scratch = make_engine(b.c);
  const auto hit = store->find(t[0]);
  REQUIRE(hit);
  REQUIRE(bool(store->restore(*hit, t[0], scratch->cache_state())));
  b.clock.advance(7);

  const disk_entry_list l = store->list_entries(10);
  REQUIRE(l.total == 3);
  REQUIRE(l.entries.size() == 3);
  // Entry 0 (restored 7 s ago), then 2 (a day and 5 s unused), then 1 (two days).
  const std::uint64_t k0 = chunk_hashes(t[0], line, b.g).back();
  CHECK(l.entries[0].key == k0);
  CHECK(l.entries[0].hits == 1);
  CHECK(l.entries[0].age_s == 7);
  CHECK(l.entries[1].key == chunk_hashes(t[2], line, b.g).back());
  CHECK(l.entries[1].age_s == day + 5 + 7);
  CHECK(l.entries[2].key == chunk_hashes(t[1], line, b.g).back());
  CHECK(l.entries[2].hits == 0);
  for (const auto& v : l.entries) {
    CHECK(v.tokens == line);
    CHECK(v.bytes == e);  // the read: both chunks and the anchor
  }
  CHECK(l.entries[0].value > l.entries[1].value);
  CHECK(l.entries[1].value == Approx(2 * l.entries[2].value));
  // The value is the one the eviction rule ranks the anchor's file by: (hits + 1) x the tokens it
  // saves / its bytes, halved for each full day unused.
  CHECK(l.entries[2].value == Approx(static_cast<double>(line) / static_cast<double>(b.afb(line)) / 4));
  const disk_entry_list one = store->list_entries(1);
  CHECK(one.total == 3);
  REQUIRE(one.entries.size() == 1);
  CHECK(one.entries[0].key == k0);
}
