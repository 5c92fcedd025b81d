// SA-IS against a plain sort of the suffixes, and the segment index against a scan.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "runtime/suffix/suffix_array.hpp"
#include "runtime/suffix/suffix_index.hpp"
#include "tests/support/suffix_fixture.hpp"

using namespace anchorage;
using anchorage::testing::random_ids;

namespace {

std::vector<std::int32_t> naive_suffix_array(const std::vector<std::int32_t>& t) {
  std::vector<std::int32_t> sa(t.size());
  std::iota(sa.begin(), sa.end(), 0);
  std::sort(sa.begin(), sa.end(), [&](std::int32_t a, std::int32_t b) {
    return std::lexicographical_compare(t.begin() + a, t.end(), t.begin() + b, t.end());
  });
  return sa;
}

// Symbols 1.. from `body`, then the sentinel 0.
std::vector<std::int32_t> with_sentinel(std::vector<std::int32_t> body) {
  for (auto& x : body) ++x;
  body.push_back(0);
  return body;
}

std::int32_t alphabet_of(const std::vector<std::int32_t>& t) {
  return *std::max_element(t.begin(), t.end()) + 1;
}

std::vector<std::int32_t> fibonacci_word(std::size_t n) {
  std::vector<std::int32_t> a{0}, b{0, 1};
  while (b.size() < n) {
    std::vector<std::int32_t> c = b;
    c.insert(c.end(), a.begin(), a.end());
    a = b;
    b = c;
  }
  b.resize(n);
  return b;
}

}  // namespace

TEST_CASE("SA-IS sorts the suffixes of random texts as a plain sort does", "[suffix]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + rng() % 300;
    const auto alphabet = static_cast<token_id>(1 + rng() % (trial % 2 ? 4 : 200));
    const auto text = with_sentinel(random_ids(rng, n, alphabet));
    INFO("trial " << trial << " n " << n << " alphabet " << alphabet);
    REQUIRE(build_suffix_array(text, alphabet_of(text)) == naive_suffix_array(text));
  }
}

TEST_CASE("SA-IS sorts repetitive texts, where its recursion does the work", "[suffix]") {
  std::vector<std::vector<std::int32_t>> bodies;
  bodies.push_back(std::vector<std::int32_t>(500, 3));  // one symbol
  std::vector<std::int32_t> periodic;
  for (int i = 0; i < 600; ++i) periodic.push_back(i % 2);
  bodies.push_back(periodic);
  std::vector<std::int32_t> period7;
  for (int i = 0; i < 700; ++i) period7.push_back((i * 3) % 7);
  bodies.push_back(period7);
  bodies.push_back(fibonacci_word(987));
  std::vector<std::int32_t> nested;  // "ab" repeated, then "abb", then "ab" again: near-repeats
  for (int r = 0; r < 40; ++r)
    for (int i = 0; i < r % 5 + 2; ++i) nested.insert(nested.end(), {0, 1, i % 3 == 2 ? 1 : 0});
  bodies.push_back(nested);
  std::mt19937 rng(11);
  std::vector<std::int32_t> copies;  // one random block copied many times with rare edits
  const auto block = random_ids(rng, 37, 5);
  for (int r = 0; r < 30; ++r) {
    copies.insert(copies.end(), block.begin(), block.end());
    if (r % 7 == 3) copies.back() = 4;
  }
  bodies.push_back(copies);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    INFO("text " << i);
    const auto text = with_sentinel(bodies[i]);
    REQUIRE(build_suffix_array(text, alphabet_of(text)) == naive_suffix_array(text));
  }
}

TEST_CASE("the segment index finds every occurrence a scan finds, none across a segment's end", "[suffix]") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    anchorage::testing::naive_log log;
    const int segments = 1 + static_cast<int>(rng() % 6);
    for (int s = 0; s < segments; ++s) log.add_segment(random_ids(rng, 1 + rng() % 60, 3));
    const auto index = suffix_index::build(log.ids.data(), log.ids.size(), log.seg_starts);
    REQUIRE(index.size() == log.ids.size());
    for (int q = 0; q < 30; ++q) {
      const auto pattern = random_ids(rng, 1 + rng() % 5, 3);
      std::vector<std::uint32_t> expected;
      for (std::size_t p = 0; p + pattern.size() <= log.ids.size(); ++p) {
        const std::size_t last = p + pattern.size() - 1;
        if (log.seg_start(last) > p) continue;  // would cross into the next segment
        if (std::equal(pattern.begin(), pattern.end(), log.ids.begin() + static_cast<std::ptrdiff_t>(p)))
          expected.push_back(static_cast<std::uint32_t>(p));
      }
      const sa_range r = index.find(log.ids.data(), pattern.data(), pattern.size());
      std::vector<std::uint32_t> found;
      for (std::size_t slot = r.lo; slot < r.hi; ++slot) found.push_back(index.position(slot));
      std::sort(found.begin(), found.end());
      INFO("trial " << trial << " query " << q);
      REQUIRE(found == expected);
    }
  }
}

TEST_CASE("suffix array build time for 1M and 10M ids", "[.][suffix-bench]") {
  std::mt19937 rng(1);
  for (std::size_t n : {std::size_t{1} << 20, std::size_t{10} << 20}) {
    for (int kind = 0; kind < 2; ++kind) {
      anchorage::testing::naive_log log;
      if (kind == 0) {  // random ids over a Qwen-sized vocabulary, in segments of 4096
        while (log.ids.size() < n) log.add_segment(random_ids(rng, 4096, 151643));
      } else {  // an agent's log: one 2,000-id block resent with small edits
        auto block = random_ids(rng, 2000, 151643);
        while (log.ids.size() < n) {
          block[rng() % block.size()] = static_cast<token_id>(rng() % 151643);
          log.add_segment(block);
        }
      }
      const auto t0 = std::chrono::steady_clock::now();
      const auto index = suffix_index::build(log.ids.data(), log.ids.size(), log.seg_starts);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("{\"ids\": %zu, \"text\": \"%s\", \"build_ms\": %.1f}\n", log.ids.size(),
                  kind == 0 ? "random" : "repetitive", ms);
      REQUIRE(index.size() == log.ids.size());
    }
  }
}
