// The durable store's write planner (runtime/disk/disk_write_planner.hpp) on its own: an index
// filled by hand, a layout of made-up sizes, and no file. The plan says what to write, how many
// bytes, and what to evict first.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/disk/disk_codec.hpp"
#include "runtime/disk/disk_index.hpp"
#include "runtime/disk/disk_names.hpp"
#include "runtime/disk/disk_write_planner.hpp"

using namespace anchorage;

namespace {

constexpr std::size_t g = 4;

state_layout small_layout() {
  state_layout l;
  l.grid = static_cast<int>(g);
  l.fingerprint = 0xfeed;
  l.sections = {{"s", 256}};
  l.views = {{"k", 16, 64}, {"v", 16, 64}};
  return l;
}

std::vector<token_id> tokens(std::size_t n, token_id base) {
  std::vector<token_id> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = base + static_cast<token_id>(i);
  return t;
}

// A write of an anchor at `line` of `t`, every chunk below it listed (no bytes staged: the
// planner never reads them).
staged_write write_of(const std::vector<token_id>& t, std::size_t line, const std::string& ns = "") {
  staged_write w;
  w.tokens.assign(t.begin(), t.begin() + static_cast<long>(line));
  w.ns = ns;
  for (std::size_t b = g; b <= line; b += g) w.chunks.push_back(b);
  staged_anchor a;
  a.line = line;
  w.anchors.push_back(a);
  return w;
}

struct planner_bench {
  state_layout layout = small_layout();
  std::uint64_t cfb = chunk_file_bytes(layout);
  manual_clock clock{100000};
  disk_names names{"/nowhere", layout.fingerprint};
  disk_eviction_options eviction;
  std::unique_ptr<disk_index> index;
  std::unique_ptr<disk_write_planner> planner;

  explicit planner_bench(std::uint64_t budget = 1ULL << 30, std::uint64_t entry_max = 0) {
    eviction.budget_bytes = budget;
    eviction.min_free_bytes = 0;
    index = std::make_unique<disk_index>(g, clock, eviction);
    planner =
        std::make_unique<disk_write_planner>(layout, names, *index, disk_write_limits{budget, entry_max, 0});
  }
  std::uint64_t afb(std::size_t line) const { return anchor_file_bytes(layout, line); }
  // Indexes every chunk of t up to line and the anchor there, as a committed write would.
  void index_entry(const std::vector<token_id>& t, std::size_t line, std::int64_t last_use) {
    const auto chain = chunk_hashes(t, line, g);
    for (std::size_t i = 0; i < chain.size(); ++i)
      if (!index->has_chunk(chain[i]))
        REQUIRE(index->add_chunk(chain[i], (i + 1) * g, i ? chain[i - 1] : 0, cfb, last_use,
                                 names.chunk_path(chain[i])));
    REQUIRE(index->add_anchor("", chain, afb(line), last_use, names.anchor_path("", chain.back())));
  }
};

}  // namespace

TEST_CASE("planner: the missing chunks in line order, then the anchor, and their bytes", "[disk][planner]") {
  planner_bench b;
  const auto t = tokens(4 * g, 1);
  // The first two lines are on disk already (another prompt's anchor at 2 g).
  b.index_entry(t, 2 * g, b.clock.now_s());
  const disk_write_plan p = b.planner->plan(write_of(t, 4 * g), 1ULL << 40);
  REQUIRE_FALSE(p.refused);
  REQUIRE(p.files.size() == 3);
  CHECK(p.chunks_present == 2);
  CHECK_FALSE(p.files[0].anchor);
  CHECK(p.files[0].line == 3 * g);
  CHECK(p.files[1].line == 4 * g);
  CHECK(p.files[2].anchor);
  CHECK(p.files[2].dir == b.names.anchor_dir(""));
  CHECK(p.files[2].id == disk_names::anchor_id("", prefix_hash(t.data(), 4 * g)));
  CHECK(p.files[0].name == b.names.chunk_name(prefix_hash(t.data(), 3 * g)));
  CHECK(p.bytes == 2 * b.cfb + b.afb(4 * g));
  CHECK(p.bytes == b.planner->bytes_needed(write_of(t, 4 * g)));
  CHECK(p.evictions.empty());
  CHECK(p.epoch == b.index->epoch());
}

TEST_CASE("planner: a hole below ends the chunks and an anchor without its chain is skipped",
          "[disk][planner]") {
  planner_bench b;
  const auto t = tokens(3 * g, 1);
  staged_write w = write_of(t, 3 * g);
  w.chunks = {g, 3 * g};  // line 2 g is neither on disk nor written
  const disk_write_plan p = b.planner->plan(w, 1ULL << 40);
  REQUIRE(p.files.size() == 1);
  CHECK(p.files[0].line == g);
  CHECK(p.bytes == b.cfb);
}

TEST_CASE("planner: files in flight are not planned twice", "[disk][planner]") {
  planner_bench b;
  const auto t = tokens(2 * g, 1);
  const disk_write_plan first = b.planner->plan(write_of(t, 2 * g), 1ULL << 40);
  REQUIRE(first.files.size() == 3);
  for (const auto& f : first.files) b.index->mark_in_flight(f.id);
  const disk_write_plan second = b.planner->plan(write_of(t, 2 * g), 1ULL << 40);
  CHECK(second.files.empty());
  CHECK(second.chunks_present == 2);
  CHECK(second.bytes == 0);
}

TEST_CASE("planner: a write whose room needs an eviction plans it, never the chain it stands on",
          "[disk][planner]") {
  const auto t = tokens(3 * g, 1);  // the new write: an anchor at 3 g, sharing line g with old_a
  auto old_a = t;
  old_a[g] = 777;  // parts from t after the first line
  const auto old_b = tokens(2 * g, 900);
  planner_bench probe;
  const std::uint64_t one = probe.cfb;
  // Room for what is on disk and the new write's bytes, minus a little: something must go.
  const std::uint64_t on_disk = 2 * one + probe.afb(2 * g) + one + probe.afb(2 * g);  // old_a, old_b
  const std::uint64_t incoming = 2 * one + probe.afb(3 * g);  // t's lines 2, 3 and anchor
  planner_bench b(on_disk + incoming - 1);
  b.index_entry(old_a, 2 * g, b.clock.now_s() - 3 * 24 * 3600);  // unused for three days
  b.index_entry(old_b, 2 * g, b.clock.now_s());

  disk_write_plan p = b.planner->plan(write_of(t, 3 * g), 1ULL << 40);
  REQUIRE_FALSE(p.refused);
  CHECK(p.bytes == incoming);
  REQUIRE_FALSE(p.evictions.empty());
  // The least valuable is old_a's second line and its anchor, not the chunk at g that the new
  // write stands on (nor old_b, used now).
  const std::uint64_t shared = prefix_hash(t.data(), g);
  CHECK(std::find(p.evictions.begin(), p.evictions.end(), shared) == p.evictions.end());
  CHECK(std::find(p.evictions.begin(), p.evictions.end(), prefix_hash(old_b.data(), g)) == p.evictions.end());
  CHECK(std::find(p.evictions.begin(), p.evictions.end(), prefix_hash(old_a.data(), 2 * g)) !=
        p.evictions.end());

  SECTION("room is confirmed once the evictions are gone") {
    for (std::uint64_t id : p.evictions) b.index->remove(id);
    b.planner->confirm_room(p, 1ULL << 40);
    CHECK_FALSE(p.refused);
    CHECK(p.pending == p.bytes);
    CHECK(b.index->has_chunk(shared));
  }
  SECTION("without them the write is refused") {
    b.planner->confirm_room(p, 1ULL << 40);
    CHECK(p.refused);
    CHECK(p.files.empty());
    CHECK_THAT(p.error, Catch::Contains("no room"));
  }
  SECTION("the free-space floor counts too") {
    for (std::uint64_t id : p.evictions) b.index->remove(id);
    b.planner->confirm_room(p, incoming - 1);
    CHECK(p.refused);
  }
}

TEST_CASE("planner: over the entry cap, or a namespace that is not a plain name, is refused",
          "[disk][planner]") {
  const auto t = tokens(2 * g, 1);
  planner_bench capped(1ULL << 30, 100);
  const disk_write_plan p = capped.planner->plan(write_of(t, 2 * g), 1ULL << 40);
  CHECK(p.refused);
  CHECK(p.files.empty());
  CHECK_THAT(p.error, Catch::Contains("cap"));
  planner_bench b;
  const disk_write_plan q = b.planner->plan(write_of(t, 2 * g, "../up"), 1ULL << 40);
  CHECK(q.refused);
  CHECK_THAT(q.error, Catch::Contains("namespace"));
}

TEST_CASE("planner: a checkpoint needs its whole state staged", "[disk][planner]") {
  planner_bench b;
  checkpoint_meta meta;
  meta.key_hash = 9;
  meta.prompt_tokens = 3;
  meta.tokens = tokens(6, 1);
  staged_write w;
  w.tokens = meta.tokens;
  w.row_lo = 0;
  w.row_hi = 5;
  staged_anchor a;
  a.line = 5;
  w.anchors.push_back(a);
  const disk_write_plan p = b.planner->plan_checkpoint(w, meta, 1ULL << 40);
  REQUIRE_FALSE(p.refused);
  REQUIRE(p.files.size() == 1);
  CHECK(p.files[0].checkpoint);
  CHECK(p.files[0].name == disk_names::checkpoint_name(9, 5));
  CHECK(p.bytes == checkpoint_file_bytes(b.layout, 6));
  w.row_hi = 4;
  CHECK(b.planner->plan_checkpoint(w, meta, 1ULL << 40).refused);
}
