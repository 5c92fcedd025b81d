// The writer's side (suffix_feed) and the reader's (suffix_view, through the lookup_source the
// drafter asks): snapshots and deltas carry every id the store appended, the view answers as
// the store does over the same ids, a forget and a clear reach it as new snapshots.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "runtime/speculative/suffix_lookup.hpp"
#include "runtime/suffix/suffix_feed.hpp"
#include "tests/support/suffix_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::random_ids;
using anchorage::testing::suffix_options;
using anchorage::testing::temp_dir;

namespace {

// What the board does with one call's output.
void apply(suffix_view& view, const suffix_feed_out& out) {
  if (out.snapshot) view.install(out.snapshot);
  if (out.delta) REQUIRE(view.extend(*out.delta));
}

}  // namespace

TEST_CASE("the view proposes the continuation an earlier request wrote, through the lookup source",
          "[suffix]") {
  temp_dir dir("anchorage-suffix-view");
  suffix_feed feed(suffix_options(dir.str()));
  REQUIRE(feed.store().is_open());
  suffix_lookup lookup;
  lookup.view().install(feed.snapshot());
  lookup_source& source = lookup;  // the drafter's door
  const std::vector<token_id> recent = {11, 12, 13};
  CHECK(source.propose(recent.data(), recent.size(), 4).empty());

  // A finished request: prompt 10..15 then output 16..19.
  const suffix_feed_out out = feed.add({10, 11, 12, 13, 14, 15, 16, 17, 18, 19});
  REQUIRE(out.report.appended == 10);
  REQUIRE_FALSE(out.snapshot);  // below the rebuild batch: a delta
  REQUIRE(out.delta);
  CHECK(out.delta->at == 0);
  apply(lookup.view(), out);
  CHECK(lookup.view().ids() == 10);
  CHECK(source.propose(recent.data(), recent.size(), 4) == std::vector<token_id>{14, 15, 16, 17});
  CHECK(lookup.view().lookups() == 2);
  CHECK(lookup.view().hits() == 1);

  // The same conversation grown by a turn: only the new ids travel, joined to its segment.
  const suffix_feed_out next = feed.add({10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22});
  REQUIRE(next.delta);
  CHECK(next.delta->ids == std::vector<token_id>{20, 21, 22});
  CHECK(next.delta->continues);
  apply(lookup.view(), next);
  CHECK(lookup.view().segments() == 1);
  const std::vector<token_id> tail = {18, 19};
  CHECK(source.propose(tail.data(), tail.size(), 8) == std::vector<token_id>{20, 21, 22});
}

TEST_CASE("snapshots and deltas keep the view equal to the store, across rebuilds and a forget", "[suffix]") {
  temp_dir dir("anchorage-suffix-view-rebuild");
  suffix_store_options o = suffix_options(dir.str(), 0x5eedf00dULL, /*rebuild_min_ids=*/200);
  o.cap_bytes = 16384;  // about 4k ids: the adds below forget the oldest half more than once
  suffix_feed feed(o);
  suffix_view view;
  view.install(feed.snapshot());
  std::mt19937 rng(7);
  std::size_t snapshots = 0, deltas = 0;
  for (int r = 0; r < 120; ++r) {
    const auto ids = random_ids(rng, 20 + rng() % 120, 6);
    const suffix_feed_out out = feed.add(ids);
    snapshots += out.snapshot ? 1 : 0;
    deltas += out.delta ? 1 : 0;
    apply(view, out);
    REQUIRE(view.ids() == feed.store().ids().size());
    REQUIRE(view.segments() == feed.store().segment_starts().size());
  }
  REQUIRE(feed.store().stats().forgets > 0);
  CHECK(snapshots >= feed.store().stats().forgets);
  CHECK(deltas > 0);
  // The brute force's answers over the store's ids.
  anchorage::testing::naive_log log;
  log.ids = feed.store().ids();
  log.seg_starts = feed.store().segment_starts();
  const suffix_query_options query = o.query;
  for (int q = 0; q < 200; ++q) {
    const std::size_t end = 1 + rng() % log.ids.size();
    const std::size_t len = std::min<std::size_t>(end, 1 + rng() % 10);
    const std::vector<token_id> recent(log.ids.begin() + static_cast<std::ptrdiff_t>(end - len),
                                       log.ids.begin() + static_cast<std::ptrdiff_t>(end));
    REQUIRE(view.propose(recent.data(), recent.size(), 6) ==
            anchorage::testing::naive_propose(log, recent, 6, query));
    const auto a = view.longest_match(recent.data(), recent.size(), 1);
    REQUIRE(a.length == anchorage::testing::naive_longest(log, recent, 1, query.max_match).length);
  }
}

TEST_CASE("a clear reaches the view as an empty snapshot, and a stale delta is ignored", "[suffix]") {
  temp_dir dir("anchorage-suffix-view-clear");
  suffix_feed feed(suffix_options(dir.str()));
  suffix_view view;
  view.install(feed.snapshot());
  const suffix_feed_out first = feed.add({1, 2, 3, 4, 5});
  apply(view, first);
  REQUIRE(view.ids() == 5);
  bool ok = false;
  const suffix_feed_out cleared = feed.clear(&ok);
  REQUIRE(ok);
  REQUIRE(cleared.snapshot);
  view.install(cleared.snapshot);
  CHECK(view.ids() == 0);
  CHECK(feed.store().ids().empty());
  CHECK(feed.store().stats().bytes < 64);  // the header alone
  const std::vector<token_id> recent = {2, 3};
  CHECK(view.propose(recent.data(), recent.size(), 3).empty());
  CHECK_FALSE(view.extend(*first.delta));  // of the generation before the clear
  CHECK(view.ids() == 0);
  // After the clear the same request is new again: written, and proposed from.
  apply(view, feed.add({1, 2, 3, 4, 5}));
  CHECK(view.propose(recent.data(), recent.size(), 3) == std::vector<token_id>{4, 5});
}
