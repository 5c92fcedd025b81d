// longest_match and propose against a brute-force search, over the index, the unindexed tail and
// both, and the segment boundary no match crosses.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "runtime/suffix/suffix_match.hpp"
#include "tests/support/suffix_fixture.hpp"

using namespace anchorage;
using anchorage::testing::naive_log;
using anchorage::testing::random_ids;

namespace {

// A query: random, or the ids before a random position of the log (so that most queries hit),
// sometimes with a random id at the end.
// Or the ids just before the index's end, so that drafts run across it.
std::vector<token_id> make_query(std::mt19937& rng, const naive_log& log, token_id alphabet,
                                 std::size_t index_end) {
  if (rng() % 4 == 0 || log.ids.empty()) return random_ids(rng, 1 + rng() % 12, alphabet);
  std::size_t end = 1 + rng() % log.ids.size();
  if (rng() % 3 == 0 && index_end > 0) end = index_end - std::min<std::size_t>(index_end - 1, rng() % 4);
  const std::size_t len = std::min<std::size_t>(end, 1 + rng() % 20);
  std::vector<token_id> q(log.ids.begin() + static_cast<std::ptrdiff_t>(end - len),
                          log.ids.begin() + static_cast<std::ptrdiff_t>(end));
  if (rng() % 5 == 0) q.push_back(static_cast<token_id>(rng() % static_cast<unsigned>(alphabet)));
  return q;
}

void check_against_naive(const naive_log& log, std::size_t indexed_segments, std::mt19937& rng,
                         token_id alphabet) {
  // The index covers the first `indexed_segments` segments, and maybe part of the next (a
  // segment that continued after the build).
  std::size_t end =
      indexed_segments < log.seg_starts.size() ? log.seg_starts[indexed_segments] : log.ids.size();
  if (indexed_segments < log.seg_starts.size() && rng() % 2) {
    const std::size_t seg_end =
        indexed_segments + 1 < log.seg_starts.size() ? log.seg_starts[indexed_segments + 1] : log.ids.size();
    end += (seg_end - end) / 2;
  }
  const auto index = suffix_index::build(log.ids.data(), end, log.seg_starts);
  const suffix_corpus corpus{log.ids.data(), log.ids.size(), &log.seg_starts, &index};
  suffix_query_options o;
  o.max_match = 8 + rng() % 10;
  o.max_continuations = 1000;
  o.propose_min_match = 1 + rng() % 3;
  o.min_probability = static_cast<double>(rng() % 3) * 0.2;
  const std::size_t limits[] = {0, 4, 1024};  // 0: propose walks the suffix array only
  o.explicit_limit = limits[rng() % 3];
  for (int q = 0; q < 40; ++q) {
    const auto recent = make_query(rng, log, alphabet, end);
    const std::size_t min_len = 1 + rng() % 3;
    const auto expected = anchorage::testing::naive_longest(log, recent, min_len, o.max_match);
    const auto got = longest_match(corpus, recent.data(), recent.size(), min_len, o);
    INFO("indexed " << end << " of " << log.ids.size() << " ids, query " << q << " of length "
                    << recent.size());
    REQUIRE(got.length == expected.length);
    std::uint64_t total = 0;
    for (const auto& c : got.continuations) {
      REQUIRE(expected.counts.count(c.id) == 1);
      REQUIRE(c.count == expected.counts.at(c.id));
      total += c.count;
    }
    REQUIRE(got.continuations.size() == expected.counts.size());
    REQUIRE(got.occurrences == total);
    for (std::size_t i = 1; i < got.continuations.size(); ++i)
      REQUIRE(got.continuations[i - 1].count >= got.continuations[i].count);

    const std::size_t max_draft = rng() % 12;
    REQUIRE(propose(corpus, recent.data(), recent.size(), max_draft, o) ==
            anchorage::testing::naive_propose(log, recent, max_draft, o));
  }
}

}  // namespace

TEST_CASE("longest_match and propose agree with a brute-force search on random logs", "[suffix]") {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 120; ++trial) {
    const auto alphabet = static_cast<token_id>(2 + rng() % 6);
    naive_log log;
    const int segments = 1 + static_cast<int>(rng() % 8);
    for (int s = 0; s < segments; ++s) {
      if (rng() % 3 == 0 && !log.ids.empty()) {  // a repeat of an earlier stretch: long matches
        const std::size_t from = rng() % log.ids.size();
        const std::size_t len = std::min<std::size_t>(log.ids.size() - from, 5 + rng() % 40);
        log.add_segment({log.ids.begin() + static_cast<std::ptrdiff_t>(from),
                         log.ids.begin() + static_cast<std::ptrdiff_t>(from + len)});
      } else {
        log.add_segment(random_ids(rng, 1 + rng() % 80, alphabet));
      }
    }
    INFO("trial " << trial);
    const std::size_t indexed = rng() % (log.seg_starts.size() + 1);  // 0: all tail; all: no tail
    check_against_naive(log, indexed, rng, alphabet);
  }
}

TEST_CASE("a cursor over a large range (counted by binary search) agrees with the brute force", "[suffix]") {
  // Two symbols and long segments: the short matches have ranges of thousands of slots.
  std::mt19937 rng(5);
  naive_log log;
  for (int s = 0; s < 6; ++s) log.add_segment(random_ids(rng, 1500, 2));
  for (std::size_t indexed : {std::size_t{6}, std::size_t{3}}) check_against_naive(log, indexed, rng, 2);
}

TEST_CASE("no match crosses the end of a segment", "[suffix]") {
  naive_log log;
  log.add_segment({1, 2, 3});
  log.add_segment({4, 5, 6});
  for (std::size_t indexed : {std::size_t{0}, std::size_t{1}, std::size_t{2}}) {
    const auto index = suffix_index::build(log.ids.data(), indexed == 2 ? 6 : indexed * 3, log.seg_starts);
    const suffix_corpus corpus{log.ids.data(), log.ids.size(), &log.seg_starts, &index};
    suffix_query_options o;
    o.propose_min_match = 1;
    INFO("indexed segments " << indexed);
    // 3 then 4 sit side by side in the ids but in two segments: [3, 4] never matches, and 3 (the
    // end of its segment) has no continuation, so [9, 3] matches nothing.
    CHECK(longest_match(corpus, std::vector<token_id>{3, 4}.data(), 2, 2, o).length == 0);
    CHECK(longest_match(corpus, std::vector<token_id>{9, 3}.data(), 2, 1, o).length == 0);
    CHECK(propose(corpus, std::vector<token_id>{2, 3}.data(), 2, 4, o).empty());
    // Within a segment it matches, and the draft stops at the segment's end.
    const auto m = longest_match(corpus, std::vector<token_id>{7, 1, 2}.data(), 3, 1, o);
    CHECK(m.length == 2);
    REQUIRE(m.continuations.size() == 1);
    CHECK(m.continuations[0].id == 3);
    CHECK(propose(corpus, std::vector<token_id>{4}.data(), 1, 8, o) == std::vector<token_id>{5, 6});
  }
}

TEST_CASE("query time over 10M indexed ids and a 64k-id unindexed tail", "[.][suffix-bench]") {
  std::mt19937 rng(9);
  naive_log log;
  auto block = random_ids(rng, 2000, 151643);  // an agent's log: one block resent with edits
  while (log.ids.size() < (std::size_t{10} << 20)) {
    block[rng() % block.size()] = static_cast<token_id>(rng() % 151643);
    log.add_segment(block);
  }
  const std::size_t tail = 65536;
  const std::size_t indexed_segments = log.seg_starts.size() - tail / 2000;
  for (std::size_t end : {log.ids.size(), log.seg_starts[indexed_segments]}) {
    const auto index = suffix_index::build(log.ids.data(), end, log.seg_starts);
    const suffix_corpus corpus{log.ids.data(), log.ids.size(), &log.seg_starts, &index};
    const suffix_query_options o;
    std::size_t hits = 0, drafted = 0;
    const int queries = 1000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int q = 0; q < queries; ++q) {
      const std::size_t at = 64 + rng() % (log.ids.size() - 64);
      const std::vector<token_id> recent(log.ids.begin() + static_cast<std::ptrdiff_t>(at - 64),
                                         log.ids.begin() + static_cast<std::ptrdiff_t>(at));
      hits += longest_match(corpus, recent.data(), recent.size(), 2, o).length > 0;
      drafted += propose(corpus, recent.data(), recent.size(), 8, o).size();
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "{\"ids\": %zu, \"unindexed\": %zu, \"us_per_match_and_propose\": %.1f, \"hits\": %zu, "
        "\"drafted\": %zu}\n",
        log.ids.size(), log.ids.size() - end, us / queries, hits, drafted);
    REQUIRE(hits * 10 >= static_cast<std::size_t>(queries) * 9);  // drawn from the log: nearly all hit
  }
}
