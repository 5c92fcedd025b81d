// The session spill's store (runtime/spill/spill_store.hpp) on a real directory: round trips,
// content addressing, sharing, the budget and LRU, restarts. Faults: test_spill_faults.cpp.
#include <catch2/catch.hpp>

#include <filesystem>

#include "runtime/spill/spill_codec.hpp"
#include "tests/support/spill_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace fs = std::filesystem;

namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Finished files in the store's folder, by kind ("b-", "s-", "m-"); tmp files counted apart.
struct folder_files {
  std::size_t blocks = 0, anchors = 0, manifests = 0, tmp = 0, other = 0;
  std::uint64_t bytes = 0;
};
folder_files files_in(const std::string& folder) {
  folder_files f;
  std::error_code ec;
  if (!fs::exists(folder, ec)) return f;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string n = e.path().filename().string();
    if (is_tmp_name(n)) {
      ++f.tmp;
      continue;
    }
    f.bytes += fs::file_size(e.path());
    if (n.rfind("b-", 0) == 0)
      ++f.blocks;
    else if (n.rfind("s-", 0) == 0)
      ++f.anchors;
    else if (n.rfind("m-", 0) == 0)
      ++f.manifests;
    else
      ++f.other;
  }
  return f;
}

spill_image_options anchors_at(std::vector<std::size_t> grid_anchors) {
  spill_image_options o;
  o.grid_anchors = std::move(grid_anchors);
  return o;
}

}  // namespace

TEST_CASE("a spill written and read back holds exactly the conversation's bytes", "[spill]") {
  spill_bench t;
  auto store = t.open();
  const auto c = make_conversation(t.layout, "alice", 10, 5);
  const spill_image img = make_spill_image(t.layout, c, anchors_at({4, 8}));
  // Every row once (16 + 24 bytes a row), and three anchors of 64 + 48 bytes.
  CHECK(img.staged_bytes() == 10 * (16 + 24) + 3 * (64 + 48));
  const auto r = t.spill(*store, img);
  INFO(r.error);
  REQUIRE_FALSE(r.failed);
  REQUIRE_FALSE(r.refused);
  CHECK(r.blocks_written == 3);
  CHECK(r.anchors_written == 3);
  const folder_files f = files_in(store->folder());
  CHECK(f.blocks == 3);
  CHECK(f.anchors == 3);
  CHECK(f.manifests == 1);
  CHECK(f.tmp == 0);
  CHECK(store->total_bytes() == f.bytes);
  CHECK(r.bytes_written == f.bytes);
  CHECK(store->read_bytes(img.manifest.id) == f.bytes);
  CHECK(store->has_block(img.manifest.blocks[1].name));
  CHECK(store->has_anchor(img.manifest.anchors[2].name));

  auto read = store->read_verified(img.manifest.id);
  INFO(read.error().error());
  REQUIRE(read);
  CHECK(read->rows() == c.rows);
  REQUIRE(read->anchors.size() == 3);
  CHECK(read->anchors[0] == c.sections(t.layout, 4, false));
  CHECK(read->anchors[1] == c.sections(t.layout, 8, false));
  CHECK(read->anchors[2] == c.sections(t.layout, 10, true));
  CHECK(read->manifest.tokens == c.tokens);
  CHECK(read->manifest.session_key == "alice");
  CHECK(read->bytes_read == f.bytes);
  const nlohmann::json stats = store->stats();  // the probe's JSON
  CHECK(stats.at("reads") == 1);
  CHECK(stats.at("writes") == 1);
  CHECK(stats.at("blocks_written") == 3);
  CHECK(stats.at("anchors_written") == 3);
  CHECK(stats.at("manifests") == 1);
  CHECK(stats.at("bytes") == f.bytes);
  CHECK(stats.at("bytes_read") == f.bytes);
  for (const char* key :
       {"manifests", "blocks", "anchors", "bytes", "limit_bytes", "reads", "restore_failures", "writes",
        "write_failures", "refusals", "evictions", "blocks_written", "blocks_skipped", "anchors_written",
        "anchors_skipped", "bytes_written", "bytes_read"}) {
    INFO(key);
    CHECK(stats.contains(key));
  }
}

TEST_CASE("re-spilling an unchanged conversation writes nothing, not even the manifest", "[spill]") {
  spill_bench t;
  auto store = t.open();
  const auto c = make_conversation(t.layout, "alice", 10, 5);
  REQUIRE_FALSE(t.spill(*store, make_spill_image(t.layout, c, anchors_at({8}))).failed);
  const auto writes = t.env.counters().writes;
  const auto bytes = t.env.counters().bytes_written;

  // Staged again in full (a capture that did not ask) or staged nothing (one that did): the same.
  for (const spill_store* held : std::vector<const spill_store*>{nullptr, store.get()}) {
    const spill_image img = make_spill_image(t.layout, c, anchors_at({8}), held);
    CHECK(img.blocks.size() == (held ? 0u : 3u));
    const spill_write_plan plan = store->prepare(img);
    CHECK(plan.files.empty());
    CHECK_FALSE(plan.refused);
    CHECK(plan.blocks_present == 3);
    CHECK(plan.anchors_present == 2);
    const auto r = store->commit(img, plan, execute_spill_write(t.env, t.layout, img, plan));
    CHECK_FALSE(r.failed);
    CHECK(r.blocks_written == 0);
    CHECK(r.anchors_written == 0);
    CHECK(r.bytes_written == 0);
    CHECK(r.blocks_present == 3);
  }
  CHECK(t.env.counters().writes == writes);
  CHECK(t.env.counters().bytes_written == bytes);
  CHECK(store->stats().blocks_skipped == 6);
  CHECK(store->stats().writes_unchanged == 2);

  // Only the manifest changed (now the slot's resident one): the manifest alone is written.
  spill_image_options o = anchors_at({8});
  o.resident = true;
  const auto r = t.spill(*store, make_spill_image(t.layout, c, o, store.get()));
  CHECK(r.blocks_written == 0);
  CHECK(r.anchors_written == 0);
  CHECK(t.env.counters().writes == writes + 1);
  REQUIRE(store->find(make_spill_image(t.layout, c).manifest.id));
  CHECK(store->find(make_spill_image(t.layout, c).manifest.id)->resident);
}

TEST_CASE("a turn that grows the conversation by D tokens writes at most ceil(D / grid) + 1 blocks",
          "[spill]") {
  const std::size_t g = 4;
  for (std::size_t start : {8u, 10u}) {
    for (std::size_t d : {1u, 2u, 3u, 4u, 5u, 7u, 13u}) {
      DYNAMIC_SECTION("from " << start << " tokens by " << d) {
        spill_bench t;
        auto store = t.open();
        auto c = make_conversation(t.layout, "bob", start, 9);
        const spill_image first = make_spill_image(t.layout, c, {}, store.get());
        REQUIRE_FALSE(t.spill(*store, first).failed);
        const std::uint64_t old_last_block = first.manifest.blocks.back().name;
        const std::uint64_t old_end = first.manifest.anchors.back().name;

        c.grow(t.layout, d);
        const spill_image next = make_spill_image(t.layout, c, {}, store.get());
        REQUIRE(next.manifest.id == first.manifest.id);  // the same conversation
        const auto r = t.spill(*store, next);
        INFO(r.error);
        REQUIRE_FALSE(r.failed);
        CHECK(r.blocks_written <= ceil_div(d, g) + 1);
        // Exactly the blocks that changed: the partial last one, if any, and the new lines.
        const std::size_t changed_from = start / g * g;
        CHECK(r.blocks_written == ceil_div(start + d - changed_from, g));
        CHECK(r.anchors_written == 1);  // the new end anchor
        CHECK(r.blocks_present == ceil_div(start + d, g) - r.blocks_written);

        // One manifest, and the old end anchor and partial block (named by nobody now) gone.
        const folder_files f = files_in(store->folder());
        CHECK(f.manifests == 1);
        CHECK(f.blocks == ceil_div(start + d, g));
        CHECK(f.anchors == 1);
        CHECK(store->total_bytes() == f.bytes);
        CHECK_FALSE(store->has_anchor(old_end));
        CHECK(store->has_block(old_last_block) == (start % g == 0));
        auto read = store->read_verified(next.manifest.id);
        REQUIRE(read);
        CHECK(read->rows() == c.rows);
      }
    }
  }
}

TEST_CASE("two conversations sharing a head share its blocks while either names them", "[spill]") {
  spill_bench t;
  auto store = t.open();
  const auto a = make_conversation(t.layout, "alice", 12, 1);
  const auto b = branch_of(t.layout, a, "bob", 8, 6, 2);  // [0, 8) shared, then its own
  const spill_image ia = make_spill_image(t.layout, a, {}, store.get());
  REQUIRE_FALSE(t.spill(*store, ia).failed);
  const spill_image ib = make_spill_image(t.layout, b, {}, store.get());
  CHECK(ib.blocks.size() == 2);  // [8, 12) and [12, 14): the head is held
  const auto r = t.spill(*store, ib);
  REQUIRE_FALSE(r.failed);
  CHECK(r.blocks_present == 2);
  CHECK(r.blocks_written == 2);
  CHECK(ia.manifest.blocks[0].name == ib.manifest.blocks[0].name);
  CHECK(ia.manifest.blocks[2].name != ib.manifest.blocks[2].name);  // same place, other rows
  CHECK(files_in(store->folder()).blocks == 5);
  // The operator's list: bob's first (the most recent), each with the bytes of every file it
  // names and its manifest, the shared head counted in both; no token, no text.
  {
    const auto listed = store->stats().conversations;
    REQUIRE(listed.size() == 2);
    CHECK(listed[0].session == "bob");
    CHECK(listed[1].session == "alice");
    CHECK(listed[0].tokens == b.tokens.size());
    CHECK(listed[1].tokens == a.tokens.size());
    CHECK(listed[0].id.size() == 16);
    CHECK(listed[0].bytes + listed[1].bytes > store->total_bytes());  // the shared blocks twice
    CHECK(listed[1].bytes < store->total_bytes());
    CHECK(listed[0].spilled_unix_s >= 0);
  }

  REQUIRE(store->remove(ia.manifest.id));
  CHECK_FALSE(store->find(ia.manifest.id));
  CHECK(store->has_block(ia.manifest.blocks[0].name));        // bob still names it
  CHECK_FALSE(store->has_block(ia.manifest.blocks[2].name));  // alice's own
  CHECK(files_in(store->folder()).blocks == 4);
  auto rb = store->read_verified(ib.manifest.id);
  REQUIRE(rb);
  CHECK(rb->rows() == b.rows);

  REQUIRE(store->remove(ib.manifest.id));
  CHECK_FALSE(store->remove(ib.manifest.id));
  const folder_files f = files_in(store->folder());
  CHECK(f.blocks + f.anchors + f.manifests == 0);
  CHECK(store->total_bytes() == 0);
}

TEST_CASE("over the budget the least recently used conversation goes first, a shared block stays",
          "[spill]") {
  const state_layout l = spill_test_layout();
  const auto a = make_conversation(l, "alice", 12, 1);
  const auto b = make_conversation(l, "bob", 12, 2);
  const auto c = branch_of(l, b, "carol", 8, 4, 3);  // shares bob's [0, 8)

  // The bytes each spill adds, measured on a store without a limit.
  std::uint64_t need_a = 0, need_b = 0, need_c = 0;
  {
    spill_bench m;
    auto s = m.open();
    need_a = s->prepare(make_spill_image(l, a)).bytes;
    need_b = s->prepare(make_spill_image(l, b)).bytes;
  }
  {
    spill_bench m;
    auto s = m.open();
    REQUIRE_FALSE(m.spill(*s, make_spill_image(l, b)).failed);
    need_c = s->prepare(make_spill_image(l, c, {}, s.get())).bytes;
  }

  spill_bench t;
  auto store = t.open(need_a + need_b + need_c - 1);  // room for two, not three
  const spill_image ia = make_spill_image(l, a), ib = make_spill_image(l, b);
  REQUIRE_FALSE(t.spill(*store, ia).failed);
  REQUIRE_FALSE(t.spill(*store, ib).failed);
  REQUIRE(store->read_verified(ia.manifest.id));  // alice is now the most recent: bob goes
  REQUIRE(store->manifests().front()->id == ia.manifest.id);

  const spill_image ic = make_spill_image(l, c, {}, store.get());
  CHECK(ic.blocks.size() == 1);
  const auto r = t.spill(*store, ic);
  INFO(r.error);
  REQUIRE_FALSE(r.failed);
  REQUIRE_FALSE(r.refused);
  CHECK(r.evicted == 1);
  CHECK_FALSE(store->find(ib.manifest.id));
  REQUIRE(store->find(ia.manifest.id));
  REQUIRE(store->find(ic.manifest.id));
  CHECK(store->has_block(ib.manifest.blocks[0].name));        // carol's head survived bob
  CHECK_FALSE(store->has_block(ib.manifest.blocks[2].name));  // bob's own went with him
  CHECK(store->total_bytes() <= store->max_bytes());
  CHECK(store->total_bytes() == files_in(store->folder()).bytes);
  CHECK(store->stats().evictions == 1);
  auto rc = store->read_verified(ic.manifest.id);
  REQUIRE(rc);
  CHECK(rc->rows() == c.rows);
  REQUIRE(store->read_verified(ia.manifest.id));

  // The order of last use survives a restart: alice (read last), then carol.
  const std::vector<std::uint64_t> before{store->manifests()[0]->id, store->manifests()[1]->id};
  CHECK(before[0] == ia.manifest.id);
  store.reset();
  auto again = t.open(need_a + need_b + need_c - 1);
  REQUIRE(again->manifests().size() == 2);
  CHECK(again->manifests()[0]->id == before[0]);
  CHECK(again->manifests()[1]->id == before[1]);
}

TEST_CASE("a spill that cannot fit, or names what is neither held nor staged, is refused", "[spill]") {
  spill_bench t;
  const auto a = make_conversation(t.layout, "alice", 12, 1);
  const spill_image ia = make_spill_image(t.layout, a);
  std::uint64_t need = 0;
  {
    auto probe = t.open();
    need = probe->prepare(ia).bytes;
  }
  auto store = t.open(need - 1);
  const auto writes = t.env.counters().writes;
  const auto r = t.spill(*store, ia);
  CHECK(r.refused);
  CHECK_FALSE(r.failed);
  CHECK_FALSE(r.error.empty());
  CHECK(t.env.counters().writes == writes);
  CHECK(store->manifest_count() == 0);
  CHECK(files_in(store->folder()).bytes == 0);
  CHECK(store->stats().refusals == 1);

  auto roomy = t.open();
  spill_image missing = ia;
  missing.blocks.erase(missing.blocks.begin() + 1);
  const auto m = t.spill(*roomy, missing);
  CHECK(m.refused);
  CHECK(m.error.find("neither held nor staged") != std::string::npos);
  spill_image bad = ia;
  bad.manifest.tokens[5] += 1;  // its names no longer fit
  CHECK(t.spill(*roomy, bad).refused);
  CHECK(roomy->manifest_count() == 0);
}

TEST_CASE("a scan after a restart rebuilds the same catalog", "[spill]") {
  spill_bench t;
  auto store = t.open();
  const auto a = make_conversation(t.layout, "alice", 17, 1);
  const auto b = branch_of(t.layout, a, "bob", 12, 3, 2);
  const spill_image ia = make_spill_image(t.layout, a, anchors_at({4, 12}), store.get());
  REQUIRE_FALSE(t.spill(*store, ia).failed);
  const spill_image ib = make_spill_image(t.layout, b, anchors_at({4, 12}), store.get());
  CHECK(ib.anchors.size() == 1);  // the grid anchors are alice's: same place, same state
  REQUIRE_FALSE(t.spill(*store, ib).failed);
  const auto before = store->stats();
  const std::size_t blocks = store->block_count();
  store.reset();

  spill_store again(t.env, t.layout, t.options());
  const spill_scan_report rep = again.scan();
  CHECK(rep.manifests == 2);
  CHECK(rep.blocks == blocks);
  CHECK(rep.anchors == 4);  // two grid anchors, two end anchors
  CHECK(rep.tmp_reaped + rep.foreign + rep.damaged + rep.orphans == 0);
  CHECK(again.manifest_count() == 2);
  CHECK(again.block_count() == blocks);
  CHECK(again.total_bytes() == before.bytes);
  for (const auto* m : {&ia.manifest, &ib.manifest}) {
    REQUIRE(again.find(m->id));
    CHECK(again.find(m->id)->tokens == m->tokens);
    CHECK(again.has_block(m->blocks.back().name));
    CHECK(again.has_anchor(m->anchors.back().name));
  }
  auto ra = again.read_verified(ia.manifest.id);
  REQUIRE(ra);
  CHECK(ra->rows() == a.rows);
  auto rb = again.read_verified(ib.manifest.id);
  REQUIRE(rb);
  CHECK(rb->rows() == b.rows);
  CHECK(rb->anchors[0] == a.sections(t.layout, 4, false));
}

TEST_CASE("clear() empties the store and its folder", "[spill]") {
  spill_bench t;
  auto store = t.open();
  const auto a = make_conversation(t.layout, "alice", 9, 1);
  const auto b = make_conversation(t.layout, "bob", 6, 2);
  const spill_image ia = make_spill_image(t.layout, a);
  REQUIRE_FALSE(t.spill(*store, ia).failed);
  REQUIRE_FALSE(t.spill(*store, make_spill_image(t.layout, b)).failed);
  const folder_files f = files_in(store->folder());
  const std::size_t n = f.blocks + f.anchors + f.manifests;
  // A file that is not the spill's stays.
  std::FILE* other = std::fopen((fs::path(store->folder()) / "README").c_str(), "w");
  REQUIRE(other);
  std::fclose(other);
  CHECK(store->clear() == n);
  const folder_files g = files_in(store->folder());
  CHECK(g.blocks + g.anchors + g.manifests + g.tmp == 0);
  CHECK(g.other == 1);
  CHECK(store->manifest_count() == 0);
  CHECK(store->total_bytes() == 0);
  CHECK_FALSE(store->has_block(ia.manifest.blocks[0].name));
  CHECK_FALSE(store->read_verified(ia.manifest.id));
  // And it takes new spills.
  REQUIRE_FALSE(t.spill(*store, ia).failed);
  REQUIRE(store->read_verified(ia.manifest.id));
}

TEST_CASE("a budget lowered while the store runs evicts the least recently used conversations at once",
          "[spill][settings]") {
  const state_layout l = spill_test_layout();
  const auto a = make_conversation(l, "alice", 12, 1);
  const auto b = make_conversation(l, "bob", 12, 2);
  spill_bench t;
  auto store = t.open();
  const spill_image ia = make_spill_image(l, a), ib = make_spill_image(l, b);
  REQUIRE_FALSE(t.spill(*store, ia).failed);
  REQUIRE_FALSE(t.spill(*store, ib).failed);
  REQUIRE(store->read_verified(ia.manifest.id));  // alice is the most recent: bob goes first
  const std::uint64_t both = store->total_bytes();

  // A budget that holds both evicts nothing; one under them takes bob alone.
  CHECK(store->set_budget(both) == 0);
  CHECK(store->set_budget(both - 1) == 1);
  CHECK(store->max_bytes() == both - 1);
  CHECK_FALSE(store->find(ib.manifest.id));
  REQUIRE(store->find(ia.manifest.id));
  CHECK(store->total_bytes() <= store->max_bytes());
  CHECK(store->total_bytes() == files_in(store->folder()).bytes);
  CHECK(store->stats().evictions == 1);
  REQUIRE(store->read_verified(ia.manifest.id));
  // A budget of nothing empties it, and later spills are refused, not written.
  CHECK(store->set_budget(0) == 1);
  CHECK(store->total_bytes() == 0);
  CHECK(files_in(store->folder()).manifests == 0);
  CHECK(t.spill(*store, make_spill_image(l, b)).refused);
}
