// The durable store's index (runtime/disk/disk_index.hpp) on its own: no file, no env. Hashes
// are the prompts' real prefix hashes; paths are names only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/disk/disk_codec.hpp"
#include "runtime/disk/disk_index.hpp"
#include "runtime/disk/disk_names.hpp"

using namespace anchorage;

namespace {

constexpr std::size_t g = 4;  // a small grid: the index only counts lines

std::vector<token_id> tokens(std::size_t n, token_id base) {
  std::vector<token_id> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = base + static_cast<token_id>(i);
  return t;
}

struct index_bench {
  manual_clock clock{1000};
  disk_index index{g, clock, disk_eviction_options{}};

  // Indexes the chunks of `t` up to `line` (those not there yet), each of `bytes`.
  std::vector<std::uint64_t> add_chunks(const std::vector<token_id>& t, std::size_t line,
                                        std::uint64_t bytes = 100) {
    const std::vector<std::uint64_t> chain = chunk_hashes(t, line, g);
    for (std::size_t i = 0; i < chain.size(); ++i)
      if (!index.has_chunk(chain[i]))
        REQUIRE(index.add_chunk(chain[i], (i + 1) * g, i > 0 ? chain[i - 1] : 0, bytes, clock.now_s(),
                                "c-" + std::to_string(i)));
    return chain;
  }
  std::uint64_t add_anchor(const std::vector<token_id>& t, std::size_t line, const std::string& ns = "",
                           std::uint64_t bytes = 50) {
    std::vector<std::uint64_t> chain = chunk_hashes(t, line, g);
    REQUIRE(index.add_anchor(ns, chain, bytes, clock.now_s(), ns + "/a-" + std::to_string(line)));
    return disk_names::anchor_id(ns, chain.back());
  }
};

}  // namespace

TEST_CASE("disk_index: find takes the longest usable anchor below the prompt's last token", "[disk][index]") {
  index_bench b;
  const auto t = tokens(5 * g, 7);
  b.add_chunks(t, 4 * g);
  b.add_anchor(t, 2 * g);
  b.add_anchor(t, 4 * g);

  const auto hit = b.index.find(t);
  REQUIRE(hit);
  CHECK(hit->line == 4 * g);
  CHECK(hit->read_bytes == 4 * 100 + 50);
  // At exactly 4 g tokens the last one must still forward: the anchor at 2 g serves.
  const auto shorter = b.index.find(std::vector<token_id>(t.begin(), t.begin() + 4 * g));
  REQUIRE(shorter);
  CHECK(shorter->line == 2 * g);
  CHECK(b.index.find_exact(std::vector<token_id>(t.begin(), t.begin() + 4 * g)));
  CHECK_FALSE(b.index.find_exact(std::vector<token_id>(t.begin(), t.begin() + 3 * g)));
  CHECK_FALSE(b.index.find(t, "other"));  // anchors belong to their namespace
  CHECK(b.index.longest_durable_prefix_tokens() == 4 * g);
  CHECK(b.index.entries() == 2);
  CHECK(b.index.chunk_count() == 4);
  // Another prompt that parts after the first line shares only that chunk.
  auto u = t;
  u[g + 1] = 999;
  CHECK_FALSE(b.index.find(u));
}

TEST_CASE("disk_index: a second file claiming an indexed hash is refused, the first one kept",
          "[disk][index]") {
  // What a 64-bit collision looks like to the index: two files under one key. The index keeps
  // the first; telling their prompts apart is the read's token check (test_disk_store_faults).
  index_bench b;
  const auto t = tokens(2 * g, 1);
  const auto chain = b.add_chunks(t, 2 * g);
  CHECK_FALSE(b.index.add_chunk(chain[1], 2 * g, chain[0], 100, b.clock.now_s(), "impostor"));
  CHECK(*b.index.path(chain[1]) == "c-1");
  b.add_anchor(t, 2 * g);
  CHECK_FALSE(b.index.add_anchor("", chain, 50, b.clock.now_s(), "impostor"));
  CHECK(b.index.entries() == 1);
  // The same key in another namespace is another entry, and no anchor id is a chunk's.
  CHECK(b.index.add_anchor("ns", chain, 50, b.clock.now_s(), "ns/a"));
  CHECK(disk_names::anchor_id("ns", chain[1]) != disk_names::anchor_id("", chain[1]));
  CHECK(disk_names::anchor_id("", chain[1]) != chain[1]);
  CHECK(b.index.entries() == 2);
  // A chunk whose parent is not indexed, or an anchor whose chain is not, cannot be added.
  const auto u = tokens(2 * g, 500);
  const auto uc = chunk_hashes(u, 2 * g, g);
  CHECK_FALSE(b.index.add_chunk(uc[1], 2 * g, uc[0], 100, b.clock.now_s(), "orphan"));
  CHECK_FALSE(b.index.add_anchor("", uc, 50, b.clock.now_s(), "orphan"));
}

TEST_CASE("disk_index: a longer anchor supersedes the shorter ones of its namespace on its chain",
          "[disk][index]") {
  index_bench b;
  const auto t = tokens(3 * g, 3);
  auto u = t;
  u[2 * g] = 12345;  // parts from t in the third line
  b.add_chunks(t, 3 * g);
  b.add_chunks(u, 3 * g);
  const std::uint64_t a1 = b.add_anchor(t, g);
  const std::uint64_t a2 = b.add_anchor(t, 2 * g);
  const std::uint64_t other_ns = b.add_anchor(t, 2 * g, "other");
  const std::uint64_t other_chain = b.add_anchor(u, 3 * g);
  const std::uint64_t a3 = b.add_anchor(t, 3 * g);

  std::vector<std::uint64_t> older = b.index.superseded_by(a3);
  std::sort(older.begin(), older.end());
  std::vector<std::uint64_t> want{a1, a2};
  std::sort(want.begin(), want.end());
  CHECK(older == want);
  // An anchor that parts from t above the second line supersedes the same two.
  std::vector<std::uint64_t> by_other = b.index.superseded_by(other_chain);
  std::sort(by_other.begin(), by_other.end());
  CHECK(by_other == want);
  CHECK(b.index.superseded_by(other_ns).empty());
  // Dropping a superseded anchor leaves the chunks and the others.
  const auto gone = b.index.remove(a2);
  CHECK(gone == std::vector<std::string>{"/a-" + std::to_string(2 * g)});
  CHECK(b.index.has_anchor(a3));
  CHECK(b.index.chunk_count() == 4);
}

TEST_CASE("disk_index: removing a chunk takes the longer chunks and the anchors on them", "[disk][index]") {
  index_bench b;
  const auto t = tokens(3 * g, 9);
  const auto chain = b.add_chunks(t, 3 * g);
  const std::uint64_t low = b.add_anchor(t, g);
  const std::uint64_t high = b.add_anchor(t, 3 * g);
  const auto gone = b.index.remove(chain[1]);
  CHECK(gone.size() == 3);  // chunks 2 and 3, and the anchor at 3 g
  CHECK(b.index.has_anchor(low));
  CHECK_FALSE(b.index.has_anchor(high));
  CHECK(b.index.chunk_count() == 1);
  const auto hit = b.index.find(t);
  REQUIRE(hit);
  CHECK(hit->line == g);
  CHECK(b.index.held_bytes() == 100 + 50);
  CHECK(b.index.remove(chain[1]).empty());  // unknown now
}

TEST_CASE("disk_index: in-flight marks, pending bytes and the epoch", "[disk][index]") {
  index_bench b;
  b.index.mark_in_flight(42);
  b.index.mark_in_flight(42);
  CHECK(b.index.known_chunk(42));
  b.index.release_in_flight(42);
  CHECK(b.index.in_flight(42));
  b.index.release_in_flight(42);
  CHECK_FALSE(b.index.known_chunk(42));
  b.index.add_pending(300);
  b.index.release_pending(500);  // never below zero
  CHECK(b.index.pending_bytes() == 0);
  const auto e0 = b.index.epoch();
  b.index.mark_in_flight(7);
  b.add_chunks(tokens(g, 1), g);
  b.index.clear();
  CHECK(b.index.epoch() == e0 + 1);
  CHECK(b.index.chunk_count() == 0);
  CHECK(b.index.in_flight(7));  // a write in flight still commits, and finds its epoch stale
}

TEST_CASE("disk_index: checkpoints by key, the longest first, the older ones listed", "[disk][index]") {
  index_bench b;
  CHECK(b.index.add_checkpoint(5, 10, 1000, b.clock.now_s(), "g-10"));
  CHECK(b.index.add_checkpoint(5, 20, 1000, b.clock.now_s(), "g-20"));
  CHECK(b.index.add_checkpoint(6, 30, 1000, b.clock.now_s(), "g-30"));
  CHECK(b.index.add_checkpoint(5, 20, 1200, b.clock.now_s(), "g-20"));  // rewritten: replaced
  CHECK(b.index.checkpoint_count() == 3);
  const auto hit = b.index.find_checkpoint(5);
  REQUIRE(hit);
  CHECK(hit->rows == 20);
  CHECK(hit->bytes == 1200);
  CHECK(b.index.older_checkpoints(5, 20) == std::vector<std::uint64_t>{disk_names::checkpoint_id(5, 10)});
  CHECK(b.index.checkpoints_of(6).size() == 1);
  CHECK_FALSE(b.index.find_checkpoint(7));
}

TEST_CASE("disk_index: the longest durable prefix follows anchors as they come and go", "[disk][index]") {
  // Kept as a count per line, not walked: two anchors at one line, a removal under the longest,
  // and a clear each move it.
  index_bench b;
  const auto t = tokens(5 * g, 7);
  auto u = t;
  u[3 * g + 1] = 4242;  // parts from t in the fourth line
  const auto tc = b.add_chunks(t, 5 * g);
  b.add_chunks(u, 4 * g);
  CHECK(b.index.longest_durable_prefix_tokens() == 0);
  b.add_anchor(t, 2 * g);
  b.add_anchor(t, 4 * g);
  b.add_anchor(u, 4 * g);
  CHECK(b.index.longest_durable_prefix_tokens() == 4 * g);
  // t's anchor at 4 g goes with its chunk; u's, at the same line, keeps the longest there.
  b.index.remove(tc[3]);
  CHECK_FALSE(b.index.find_exact(std::vector<token_id>(t.begin(), t.begin() + 4 * g)));
  CHECK(b.index.longest_durable_prefix_tokens() == 4 * g);
  // Then u's own chunk at 4 g: only the anchor at 2 g is left.
  b.index.remove(chunk_hashes(u, 4 * g, g)[3]);
  CHECK(b.index.longest_durable_prefix_tokens() == 2 * g);
  b.add_anchor(t, 3 * g);
  CHECK(b.index.longest_durable_prefix_tokens() == 3 * g);
  b.index.clear();
  CHECK(b.index.longest_durable_prefix_tokens() == 0);
}

TEST_CASE("disk_index: the anchors' bytes stored whole against the shared chunks, as entries come and go",
          "[disk][index]") {
  index_bench b;
  CHECK(b.index.anchor_files_bytes() == 0);
  CHECK(b.index.anchored_bytes() == 0);
  // Two conversations share their first 2 g tokens; each has an anchor at 3 g and one at g.
  const auto t = tokens(3 * g, 9);
  auto u = t;
  u[2 * g] = 200;  // parts at 2 g
  const auto ct = b.add_chunks(t, 3 * g);
  b.add_chunks(u, 3 * g);
  CHECK(b.index.chunk_count() == 4);
  b.add_anchor(t, 3 * g);
  b.add_anchor(u, 3 * g);
  b.add_anchor(t, g);
  // Held: 4 chunks of 100 and 3 anchors of 50. Stored whole: 2 × (3 chunks + anchor), 1 chunk + anchor.
  CHECK(b.index.anchor_files_bytes() == 4 * 100 + 3 * 50);
  CHECK(b.index.anchored_bytes() == 2 * (3 * 100 + 50) + (100 + 50));
  // An anchor's read bytes are its chain and its own.
  const auto hit = b.index.find(tokens(3 * g + 1, 9));  // t and one more token: the anchor at 3 g
  REQUIRE(hit);
  CHECK(hit->line == 3 * g);
  CHECK(hit->read_bytes == 3 * 100 + 50);

  // Chunks no anchor names count in neither.
  b.add_chunks(tokens(2 * g, 77), 2 * g);
  CHECK(b.index.chunk_count() == 6);
  CHECK(b.index.anchor_files_bytes() == 4 * 100 + 3 * 50);
  CHECK(b.index.anchored_bytes() == 2 * (3 * 100 + 50) + (100 + 50));

  // The shared second chunk goes: t's and u's anchors at 3 g go with their chains; the one at g stays.
  b.index.remove(ct[1]);
  CHECK(b.index.anchor_files_bytes() == 100 + 50);  // the chunk at g and the anchor on it
  CHECK(b.index.anchored_bytes() == 100 + 50);
  b.index.clear();
  CHECK(b.index.anchor_files_bytes() == 0);
  CHECK(b.index.anchored_bytes() == 0);
}
