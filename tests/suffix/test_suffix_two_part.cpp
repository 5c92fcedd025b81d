// The queries over a corpus in two parts (a reader's snapshot, indexed or partly so, and the ids
// appended since, held apart): the same answers as the brute force over the ids joined, a match
// found only in the second part, a match running across the split inside one segment, and none
// across a segment boundary at the split.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "runtime/suffix/suffix_match.hpp"
#include "tests/support/suffix_fixture.hpp"

using namespace anchorage;
using anchorage::testing::naive_log;
using anchorage::testing::random_ids;

namespace {

// The log's ids [0, split) and [split, n) as two arrays, the index over [0, index_end).
struct two_parts {
  std::vector<token_id> head, tail;
  suffix_index index;
  suffix_corpus corpus;

  two_parts(const naive_log& log, std::size_t split, std::size_t index_end)
      : head(log.ids.begin(), log.ids.begin() + static_cast<std::ptrdiff_t>(split)),
        tail(log.ids.begin() + static_cast<std::ptrdiff_t>(split), log.ids.end()),
        index(suffix_index::build(head.data(), index_end, log.seg_starts)) {
    corpus.ids = head.data();
    corpus.split = split;
    corpus.tail = tail.data();
    corpus.n = log.ids.size();
    corpus.seg_starts = &log.seg_starts;
    corpus.index = &index;
  }
};

suffix_query_options loose() {
  suffix_query_options o;
  o.propose_min_match = 2;
  o.min_probability = 0;
  return o;
}

}  // namespace

TEST_CASE("a corpus in two parts answers as the brute force over the ids joined", "[suffix]") {
  std::mt19937 rng(20261201);
  for (int round = 0; round < 60; ++round) {
    const token_id alphabet = 2 + static_cast<token_id>(rng() % 6);
    naive_log log;
    const int segments = 1 + static_cast<int>(rng() % 8);
    for (int s = 0; s < segments; ++s) log.add_segment(random_ids(rng, 1 + rng() % 60, alphabet));
    const std::size_t n = log.ids.size();
    const std::size_t split = rng() % (n + 1);
    // The index over the snapshot or a prefix of it cut at a segment start (a forget's rebuild
    // followed by an append leaves ids past the index inside the snapshot).
    std::size_t index_end = split;
    if (rng() % 3 == 0) {
      index_end = 0;
      for (std::size_t s : log.seg_starts)
        if (s <= split) index_end = s;
    }
    const two_parts parts(log, split, index_end);
    suffix_query_options o;
    o.max_match = 6 + rng() % 10;
    o.max_continuations = 1000;
    o.propose_min_match = 1 + rng() % 3;
    o.min_probability = static_cast<double>(rng() % 3) * 0.2;
    const std::size_t limits[] = {0, 4, 1024};
    o.explicit_limit = limits[rng() % 3];
    for (int q = 0; q < 30; ++q) {
      std::vector<token_id> recent;
      if (rng() % 4 == 0) {
        recent = random_ids(rng, 1 + rng() % 10, alphabet);
      } else {  // the ids before a position, often the split
        std::size_t end = rng() % 2 && split > 0 ? split : 1 + rng() % n;
        const std::size_t len = std::min<std::size_t>(end, 1 + rng() % 16);
        recent.assign(log.ids.begin() + static_cast<std::ptrdiff_t>(end - len),
                      log.ids.begin() + static_cast<std::ptrdiff_t>(end));
      }
      INFO("round " << round << ": split " << split << ", index " << index_end << " of " << n << " ids");
      const std::size_t min_len = 1 + rng() % 3;
      const auto expected = anchorage::testing::naive_longest(log, recent, min_len, o.max_match);
      const auto got = longest_match(parts.corpus, recent.data(), recent.size(), min_len, o);
      REQUIRE(got.length == expected.length);
      REQUIRE(got.continuations.size() == expected.counts.size());
      for (const auto& c : got.continuations) REQUIRE(c.count == expected.counts.at(c.id));
      const std::size_t max_draft = rng() % 10;
      REQUIRE(propose(parts.corpus, recent.data(), recent.size(), max_draft, o) ==
              anchorage::testing::naive_propose(log, recent, max_draft, o));
    }
  }
}

TEST_CASE("a match only the second part holds is found and drafted", "[suffix]") {
  naive_log log;
  log.add_segment({1, 2, 3, 4, 5, 6});
  log.add_segment({7, 8, 9, 10, 11, 12});
  const two_parts parts(log, 6, 6);  // the second segment is all in the tail
  const std::vector<token_id> recent = {40, 8, 9};
  const auto m = longest_match(parts.corpus, recent.data(), recent.size(), 1, loose());
  REQUIRE(m.length == 2);
  REQUIRE(m.continuations.size() == 1);
  CHECK(m.continuations[0].id == 10);
  CHECK(propose(parts.corpus, recent.data(), recent.size(), 3, loose()) == std::vector<token_id>{10, 11, 12});
}

TEST_CASE("a match runs across the split inside one segment, never across a segment's start", "[suffix]") {
  SECTION("one segment continued past the split: found") {
    naive_log log;
    log.add_segment({1, 2, 3, 4, 5, 6, 7, 8});  // the split at 4 is inside the segment
    const two_parts parts(log, 4, 4);
    const std::vector<token_id> recent = {2, 3, 4};
    const auto m = longest_match(parts.corpus, recent.data(), recent.size(), 1, loose());
    REQUIRE(m.length == 3);
    CHECK(m.continuations[0].id == 5);
    CHECK(propose(parts.corpus, recent.data(), recent.size(), 4, loose()) ==
          std::vector<token_id>{5, 6, 7, 8});
  }
  SECTION("a new segment starts at the split: the ids before it do not continue into it") {
    naive_log log;
    log.add_segment({1, 2, 3, 4});
    log.add_segment({5, 6, 7, 8});  // starts at the split
    const two_parts parts(log, 4, 4);
    const std::vector<token_id> recent = {2, 3, 4};
    CHECK(longest_match(parts.corpus, recent.data(), recent.size(), 1, loose()).length == 0);
    CHECK(propose(parts.corpus, recent.data(), recent.size(), 4, loose()).empty());
    const std::vector<token_id> across = {4, 5};  // spans the boundary: only "5" then "6" is inside one
    const auto m = longest_match(parts.corpus, across.data(), across.size(), 1, loose());
    REQUIRE(m.length == 1);
    CHECK(m.continuations[0].id == 6);
  }
}
