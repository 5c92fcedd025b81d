// The store on disk: the dedupe (bytes appended), the cap and its forget, reopen, and its
// queries against a brute-force search over what it holds.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <vector>

#include "runtime/suffix/suffix_log_format.hpp"
#include "runtime/suffix/suffix_store.hpp"
#include "tests/support/suffix_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::random_ids;
using anchorage::testing::suffix_options;
using anchorage::testing::temp_dir;

namespace {

std::uint64_t file_bytes(const std::string& path) { return std::filesystem::file_size(path); }

std::vector<token_id> concat(std::vector<token_id> a, const std::vector<token_id>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("a growing conversation sent 10 times is written once", "[suffix]") {
  temp_dir dir("suffix");
  std::mt19937 rng(1);
  suffix_store store(suffix_options(dir.file("suffix")));
  REQUIRE(store.is_open());
  std::vector<token_id> conversation;
  std::uint64_t expected_bytes = suffix_log::header_bytes;
  std::size_t skipped = 0;
  for (int turn = 0; turn < 10; ++turn) {
    const auto added = random_ids(rng, 50 + rng() % 100, 1000);  // the new user turn and the answer
    skipped += conversation.size();
    conversation = concat(conversation, added);
    const auto r = store.add(conversation);
    CHECK(r.appended == added.size());
    CHECK(r.skipped == conversation.size() - added.size());
    CHECK(r.continued == (turn > 0));
    expected_bytes += suffix_log::record_bytes(added.size());
  }
  CHECK(file_bytes(store.path()) == expected_bytes);
  CHECK(store.ids() == conversation);  // each id once, in one segment
  CHECK(store.segment_starts().size() == 1);
  const auto s = store.stats();
  CHECK(s.ids_appended == conversation.size());
  CHECK(s.ids_skipped == skipped);
  CHECK(s.bytes == expected_bytes);

  // The same prompt again, and a prefix of it: nothing is written.
  CHECK(store.add(conversation).appended == 0);
  CHECK(store.add({conversation.begin(), conversation.begin() + 40}).appended == 0);
  CHECK(file_bytes(store.path()) == expected_bytes);
}

TEST_CASE("the dedupe remembers four requests: interleaved conversations, a branch, a fifth", "[suffix]") {
  temp_dir dir("suffix");
  std::mt19937 rng(2);
  suffix_store store(suffix_options(dir.file("suffix")));
  auto a = random_ids(rng, 100, 1000), b = random_ids(rng, 100, 1000);
  CHECK(store.add(a).appended == 100);
  CHECK(store.add(b).appended == 100);
  a = concat(a, random_ids(rng, 30, 1000));
  const auto ra = store.add(a);  // b is the log's tail: a new segment holding only the new ids
  CHECK(ra.appended == 30);
  CHECK_FALSE(ra.continued);
  b = concat(b, random_ids(rng, 20, 1000));
  CHECK(store.add(b).appended == 20);
  // A branch of a: its first 60 ids held, the rest new (and a new segment).
  auto branch = concat({a.begin(), a.begin() + 60}, random_ids(rng, 25, 1000));
  const auto rb = store.add(branch);
  CHECK(rb.skipped == 60);
  CHECK(rb.appended == 25);
  CHECK_FALSE(rb.continued);
  CHECK(store.ids().size() == 275);
  // Four other requests push a out of the window: it is written again whole.
  for (int i = 0; i < 4; ++i) store.add(random_ids(rng, 10, 1000));
  CHECK(store.add(a).appended == a.size());
}

TEST_CASE("over the cap the oldest half is forgotten and the newer half stays findable", "[suffix]") {
  temp_dir dir("suffix");
  std::mt19937 rng(3);
  auto o = suffix_options(dir.file("suffix"));
  o.cap_bytes = 64 * 1024;
  suffix_store store(o);
  std::vector<std::vector<token_id>> requests;
  std::vector<token_id> all;  // every id appended, in order
  std::uint64_t before = 0;
  while (store.stats().forgets == 0) {
    before = file_bytes(store.path());
    requests.push_back(random_ids(rng, 500, 1u << 30));  // distinct ids: each request is unique
    const auto r = store.add(requests.back());
    REQUIRE(r.appended == 500);
    if (!r.forgot) all.insert(all.end(), requests.back().begin(), requests.back().end());
  }
  CHECK(before + suffix_log::record_bytes(500) > o.cap_bytes);
  // What stays: the newer half of what was there, then the request that overflowed.
  const std::size_t cut = (all.size() + 1) / 2;
  std::vector<token_id> kept(all.begin() + static_cast<std::ptrdiff_t>(cut), all.end());
  kept.insert(kept.end(), requests.back().begin(), requests.back().end());
  CHECK(store.ids() == kept);
  CHECK(file_bytes(store.path()) < before);
  CHECK(file_bytes(store.path()) <= o.cap_bytes);
  CHECK(store.stats().bytes == file_bytes(store.path()));

  // The oldest request is gone; one from the kept half and the newest are found.
  CHECK(store.longest_match({requests.front().begin(), requests.front().begin() + 5}, 1).length == 0);
  const auto& old_kept = requests[requests.size() - 3];
  const auto m = store.longest_match({old_kept.begin(), old_kept.begin() + 5}, 1);
  CHECK(m.length == 5);
  REQUIRE_FALSE(m.continuations.empty());
  CHECK(m.continuations[0].id == old_kept[5]);
  CHECK(store.propose({requests.back().begin(), requests.back().begin() + 4}, 3) ==
        std::vector<token_id>(requests.back().begin() + 4, requests.back().begin() + 7));

  // The rewritten file reads back the same.
  const auto ids = store.ids();
  const auto starts = store.segment_starts();
  suffix_store reopened(o);
  CHECK(reopened.ids() == ids);
  CHECK(reopened.segment_starts() == starts);
  CHECK(reopened.stats().torn_tails_cut == 0);
}

TEST_CASE("the store answers as a brute-force search over its ids, and the same after a reopen", "[suffix]") {
  temp_dir dir("suffix");
  std::mt19937 rng(4);
  for (std::size_t rebuild_min : {std::size_t{1} << 30, std::size_t{200}}) {  // never rebuilt; often
    std::filesystem::remove_all(dir.file("suffix"));
    auto o = suffix_options(dir.file("suffix"), 7, rebuild_min);
    o.rebuild_fraction = 0;
    o.query.max_continuations = 1000;
    std::vector<std::vector<token_id>> queries;
    std::vector<suffix_match> answers;
    std::vector<std::vector<token_id>> drafts;
    {
      suffix_store store(o);
      std::vector<token_id> conversation;
      for (int r = 0; r < 40; ++r) {
        if (rng() % 3 == 0) conversation.clear();
        conversation = concat(conversation, random_ids(rng, 1 + rng() % 40, 4));
        store.add(conversation);
      }
      anchorage::testing::naive_log log;
      log.ids = store.ids();
      log.seg_starts = store.segment_starts();
      INFO("rebuilds " << store.stats().rebuilds << ", indexed " << store.stats().indexed_ids << " of "
                       << log.ids.size());
      for (int q = 0; q < 60; ++q) {
        const std::size_t end = 1 + rng() % log.ids.size();
        const std::size_t len = std::min<std::size_t>(end, 1 + rng() % 10);
        std::vector<token_id> recent(log.ids.begin() + static_cast<std::ptrdiff_t>(end - len),
                                     log.ids.begin() + static_cast<std::ptrdiff_t>(end));
        const auto expected = anchorage::testing::naive_longest(log, recent, 1, o.query.max_match);
        const auto got = store.longest_match(recent, 1);
        REQUIRE(got.length == expected.length);
        REQUIRE(got.continuations.size() == expected.counts.size());
        for (const auto& c : got.continuations) REQUIRE(c.count == expected.counts.at(c.id));
        const auto draft = store.propose(recent, 6);
        REQUIRE(draft == anchorage::testing::naive_propose(log, recent, 6, o.query));
        queries.push_back(recent);
        answers.push_back(got);
        drafts.push_back(draft);
      }
      CHECK(store.stats().lookups == 120);
    }
    suffix_store reopened(o);
    REQUIRE(reopened.is_open());
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const auto got = reopened.longest_match(queries[q], 1);
      REQUIRE(got.length == answers[q].length);
      REQUIRE(got.occurrences == answers[q].occurrences);
      REQUIRE(got.continuations.size() == answers[q].continuations.size());
      for (std::size_t i = 0; i < got.continuations.size(); ++i) {
        REQUIRE(got.continuations[i].id == answers[q].continuations[i].id);
        REQUIRE(got.continuations[i].count == answers[q].continuations[i].count);
      }
      REQUIRE(reopened.propose(queries[q], 6) == drafts[q]);
    }
  }
}

TEST_CASE("after a reopen a resent conversation continues its segment instead of being written again",
          "[suffix]") {
  temp_dir dir("suffix");
  std::mt19937 rng(5);
  const auto o = suffix_options(dir.file("suffix"));
  auto conversation = random_ids(rng, 300, 1000);
  { suffix_store(o).add(conversation); }
  suffix_store store(o);
  conversation = concat(conversation, random_ids(rng, 40, 1000));
  const auto r = store.add(conversation);
  CHECK(r.skipped == 300);
  CHECK(r.appended == 40);
  CHECK(r.continued);
  CHECK(store.segment_starts().size() == 1);
  CHECK(file_bytes(store.path()) ==
        suffix_log::header_bytes + suffix_log::record_bytes(300) + suffix_log::record_bytes(40));
}
