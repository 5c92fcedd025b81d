// The session spill under faults below the file seam (fault_env) and damage on disk: a kill -9
// mid-spill, a full disk, a failed directory fsync, flipped bits, a forged token id, foreign and
// orphaned files. Every failure leaves the previous spill readable, the catalog equal to the
// files on disk, and no byte of a bad file handed out.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "runtime/spill/spill_codec.hpp"
#include "tests/support/spill_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> names_in(const std::string& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::exists(folder, ec)) return out;
  for (const auto& e : fs::directory_iterator(folder)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
std::size_t tmp_count(const std::string& folder) {
  std::size_t n = 0;
  for (const auto& f : names_in(folder)) n += is_tmp_name(f) ? 1 : 0;
  return n;
}
std::uint64_t finished_bytes(const std::string& folder) {
  std::uint64_t n = 0;
  for (const auto& f : names_in(folder))
    if (!is_tmp_name(f)) n += fs::file_size(fs::path(folder) / f);
  return n;
}
bool exists(const std::string& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}
void write_file(const std::string& path, const std::vector<unsigned char>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Alice spilled once (10 tokens, the old turn); the next turn (19 tokens) to spill over it.
struct two_turns {
  spill_bench t;
  spill_conversation c = make_conversation(t.layout, "alice", 10, 4);
  spill_conversation old_c = c;
  std::unique_ptr<spill_store> store = t.open();
  spill_image first = make_spill_image(t.layout, c);
  two_turns() {
    REQUIRE_FALSE(t.spill(*store, first).failed);
    c.grow(t.layout, 9);
  }
  spill_image next() const { return make_spill_image(t.layout, c, {}, store.get()); }
  std::uint64_t id() const { return first.manifest.id; }
  // The old turn reads back whole from `s`.
  void old_turn_readable(spill_store& s) const {
    auto r = s.read_verified(id());
    INFO(r.error().error());
    REQUIRE(r);
    CHECK(r->manifest.tokens == old_c.tokens);
    CHECK(r->rows() == old_c.rows);
  }
  std::string block_path(const spill_store& s, std::size_t i) const {
    return join_path(s.folder(), spill_block_file(first.manifest.blocks[i].name));
  }
};

}  // namespace

TEST_CASE("a kill -9 mid-spill leaves the previous spill readable and no tmp after the scan", "[spill]") {
  two_turns w;
  const spill_image img = w.next();
  const spill_write_plan plan = w.store->prepare(img);
  REQUIRE(plan.files.size() == 5);  // blocks [8, 12), [12, 16), [16, 19), the end anchor, the manifest
  SECTION("crash before the rename of a block") { w.t.env.crash_before_rename(); }
  SECTION("a torn block") { w.t.env.torn_write(100); }
  std::vector<file_result> results = execute_spill_write(w.t.env, w.t.layout, img, plan);
  CHECK(results.size() == 1);
  CHECK_FALSE(results.back().ok);
  CHECK(tmp_count(w.store->folder()) == 1);
  // The process dies here: no commit. The next start scans.
  w.store.reset();
  auto again = w.t.open();
  CHECK(tmp_count(again->folder()) == 0);
  CHECK(again->manifest_count() == 1);
  w.old_turn_readable(*again);
  CHECK(again->total_bytes() == finished_bytes(again->folder()));
}

TEST_CASE("a kill -9 while the manifest is written leaves the previous one and reaps the new files",
          "[spill]") {
  two_turns w;
  const spill_image img = w.next();
  const spill_write_plan plan = w.store->prepare(img);
  // Everything but the manifest, then the manifest under the fault.
  spill_write_plan files = plan, manifest = plan;
  files.files.pop_back();
  manifest.files = {plan.files.back()};
  auto results = execute_spill_write(w.t.env, w.t.layout, img, files);
  REQUIRE(results.size() == files.files.size());
  for (const auto& r : results) REQUIRE(r.ok);
  SECTION("crash before the rename") { w.t.env.crash_before_rename(); }
  SECTION("torn") { w.t.env.torn_write(30); }
  const auto last = execute_spill_write(w.t.env, w.t.layout, img, manifest);
  REQUIRE(last.size() == 1);
  CHECK_FALSE(last[0].ok);
  w.store.reset();
  spill_store again(w.t.env, w.t.layout, w.t.options());
  const spill_scan_report rep = again.scan();
  CHECK(rep.tmp_reaped == 1);
  CHECK(rep.orphans == plan.files.size() - 1);  // the new blocks and end anchor: named by nothing
  CHECK(rep.manifests == 1);
  CHECK(tmp_count(again.folder()) == 0);
  w.old_turn_readable(again);
  CHECK(again.total_bytes() == finished_bytes(again.folder()));
}

TEST_CASE("a failed spill committed in the same process keeps the previous one", "[spill]") {
  two_turns w;
  const spill_image img = w.next();
  SECTION("ENOSPC mid-spill is soft") {
    const std::uint64_t failures = w.store->stats().write_failures;
    w.t.env.no_space_after(spill_block_file_bytes(w.t.layout, 8, 12) + 10);  // the second file does not fit
    spill_write_report r;
    REQUIRE_NOTHROW(r = w.t.spill(*w.store, img));
    CHECK(r.failed);
    CHECK_FALSE(r.refused);
    CHECK(r.error.find("No space") != std::string::npos);
    CHECK(w.t.env.counters().no_space >= 1);
    CHECK(w.store->stats().write_failures == failures + 1);
    CHECK(tmp_count(w.store->folder()) == 0);
    CHECK(w.store->total_bytes() == finished_bytes(w.store->folder()));
    w.old_turn_readable(*w.store);
    // Space again: the same spill goes through.
    w.t.env.heal();
    const auto ok = w.t.spill(*w.store, w.next());
    INFO(ok.error);
    REQUIRE_FALSE(ok.failed);
    auto read = w.store->read_verified(w.id());
    REQUIRE(read);
    CHECK(read->rows() == w.c.rows);
  }
  SECTION("a directory fsync that fails after the manifest's rename puts the previous manifest back") {
    const spill_write_plan plan = w.store->prepare(img);
    spill_write_plan files = plan, manifest = plan;
    files.files.pop_back();
    manifest.files = {plan.files.back()};
    auto results = execute_spill_write(w.t.env, w.t.layout, img, files);
    w.t.env.fail_directory_sync();
    const auto last = execute_spill_write(w.t.env, w.t.layout, img, manifest);
    REQUIRE(last.size() == 1);
    CHECK_FALSE(last[0].ok);
    results.push_back(last[0]);
    const auto r = w.store->commit(img, plan, results);
    CHECK(r.failed);
    w.old_turn_readable(*w.store);
    CHECK(w.store->total_bytes() == finished_bytes(w.store->folder()));
    w.store.reset();
    auto again = w.t.open();
    w.old_turn_readable(*again);
  }
  SECTION("results that stop short: nothing of the spill is kept") {
    const spill_write_plan plan = w.store->prepare(img);
    spill_write_plan two = plan;
    two.files.resize(2);  // the writer stopped after two files (it was told to stop)
    const auto results = execute_spill_write(w.t.env, w.t.layout, img, two);
    REQUIRE(results.size() == 2);
    const auto r = w.store->commit(img, plan, results);
    CHECK(r.failed);
    CHECK(r.blocks_written == 2);
    w.old_turn_readable(*w.store);
    CHECK(w.store->stats().bytes_in_flight == 0);
    CHECK(w.store->total_bytes() == finished_bytes(w.store->folder()));
  }
}

TEST_CASE("a flipped bit in a block fails the read and deletes the block and its manifests", "[spill]") {
  spill_bench t;
  auto store = t.open();
  const auto a = make_conversation(t.layout, "alice", 12, 1);
  const auto b = branch_of(t.layout, a, "bob", 4, 8, 2);  // shares [0, 4) only
  const auto c = make_conversation(t.layout, "carol", 8, 3);
  const spill_image ia = make_spill_image(t.layout, a), ic = make_spill_image(t.layout, c);
  REQUIRE_FALSE(t.spill(*store, ia).failed);
  const spill_image ib = make_spill_image(t.layout, b, {}, store.get());
  REQUIRE_FALSE(t.spill(*store, ib).failed);
  REQUIRE_FALSE(t.spill(*store, ic).failed);
  const std::string head = join_path(store->folder(), spill_block_file(ia.manifest.blocks[0].name));
  const std::size_t rows_at = spill_block_file_bytes(t.layout, 0, 4) - 20;  // inside the last view's rows

  SECTION("silent corruption on the medium (flip_bit_on_read)") {
    t.env.read_faults_only_for(head);
    t.env.flip_bit_on_read(rows_at, 3);
  }
  SECTION("a byte changed in the file on disk") {
    auto bytes = read_file(head);
    bytes[rows_at] ^= 0x08;
    write_file(head, bytes);
  }
  const auto r = store->read_verified(ia.manifest.id);
  REQUIRE_FALSE(r);
  CHECK(r.error().error().find("bad_crc") != std::string::npos);
  CHECK(r.error().error().find(spill_block_file(ia.manifest.blocks[0].name)) != std::string::npos);
  CHECK_FALSE(exists(head));
  // Alice and Bob named the block: both go, with the files only they named; Carol stays.
  CHECK_FALSE(store->find(ia.manifest.id));
  CHECK_FALSE(store->find(ib.manifest.id));
  REQUIRE(store->find(ic.manifest.id));
  CHECK(store->manifest_count() == 1);
  CHECK(store->stats().restore_failures == 1);
  CHECK(store->total_bytes() == finished_bytes(store->folder()));
  CHECK(names_in(store->folder()).size() == ic.manifest.blocks.size() + ic.manifest.anchors.size() + 1);
  t.env.heal();
  auto rc = store->read_verified(ic.manifest.id);
  REQUIRE(rc);
  CHECK(rc->rows() == c.rows);
}

TEST_CASE("a block rewritten with another token id under valid crcs is caught by the token check",
          "[spill]") {
  spill_bench t;
  auto store = t.open();
  const auto a = make_conversation(t.layout, "alice", 12, 1);
  const spill_image ia = make_spill_image(t.layout, a);
  REQUIRE_FALSE(t.spill(*store, ia).failed);
  std::vector<token_id> forged = a.tokens;
  forged[5] ^= 1;
  const std::string path = join_path(store->folder(), spill_block_file(ia.manifest.blocks[1].name));
  write_file(path, encode_spill_block(t.layout, ia.manifest.blocks[1], forged, ia.blocks[1].rows));
  const auto r = store->read_verified(ia.manifest.id);
  REQUIRE_FALSE(r);
  CHECK(r.error().error().find("wrong_tokens") != std::string::npos);
  CHECK_FALSE(exists(path));
  CHECK(store->manifest_count() == 0);
  CHECK(names_in(store->folder()).empty());
}

TEST_CASE("a scan sweeps foreign files, drops broken manifests and removes orphans", "[spill]") {
  spill_bench t;
  auto store = t.open();
  const auto a = make_conversation(t.layout, "alice", 12, 1);
  const auto b = make_conversation(t.layout, "bob", 8, 2);
  const spill_image ia = make_spill_image(t.layout, a), ib = make_spill_image(t.layout, b);
  REQUIRE_FALSE(t.spill(*store, ia).failed);
  REQUIRE_FALSE(t.spill(*store, ib).failed);
  const std::string folder = store->folder();
  store.reset();

  // Files of another engine under our names: a block and a manifest of another fingerprint.
  state_layout other = t.layout;
  other.fingerprint ^= 0xff;
  const auto x = make_conversation(other, "xavier", 6, 9);
  const spill_image ix = make_spill_image(other, x);
  const std::string foreign_block = join_path(folder, spill_block_file(ix.manifest.blocks[0].name));
  write_file(foreign_block, encode_spill_block(other, ix.manifest.blocks[0], x.tokens, ix.blocks[0].rows));
  const std::string foreign_manifest = join_path(folder, spill_manifest_file(ix.manifest.id));
  write_file(foreign_manifest, encode_spill_manifest(other, ix.manifest));
  // Bob's second block is lost: his manifest can never be read whole.
  const std::string lost = join_path(folder, spill_block_file(ib.manifest.blocks[1].name));
  REQUIRE(fs::remove(lost));
  // An orphan: a valid block of ours that no manifest names.
  const auto o = make_conversation(t.layout, "olga", 4, 7);
  const spill_image io = make_spill_image(t.layout, o);
  const std::string orphan = join_path(folder, spill_block_file(io.manifest.blocks[0].name));
  write_file(orphan, encode_spill_block(t.layout, io.manifest.blocks[0], o.tokens, io.blocks[0].rows));
  // A damaged block: a header cut short.
  const std::string cut = join_path(folder, spill_block_file(0x1234));
  write_file(cut, {1, 2, 3});

  spill_store again(t.env, t.layout, t.options());
  const spill_scan_report rep = again.scan();
  CHECK(rep.foreign == 2);
  CHECK(rep.damaged == 2);                                   // bob's manifest, the cut block
  CHECK(rep.orphans == 1 + ib.manifest.anchors.size() + 1);  // olga's, and bob's block 0 and end anchor
  CHECK(rep.manifests == 1);
  CHECK_FALSE(exists(foreign_block));
  CHECK_FALSE(exists(foreign_manifest));
  CHECK_FALSE(exists(orphan));
  CHECK_FALSE(exists(cut));
  CHECK_FALSE(again.find(ib.manifest.id));
  CHECK(again.total_bytes() == finished_bytes(folder));
  auto ra = again.read_verified(ia.manifest.id);
  REQUIRE(ra);
  CHECK(ra->rows() == a.rows);
}

TEST_CASE("a spill relying on a file another spill in flight failed to write fails too", "[spill]") {
  spill_bench t;
  auto store = t.open();
  const auto a = make_conversation(t.layout, "alice", 12, 1);
  const auto b = branch_of(t.layout, a, "bob", 8, 4, 2);
  const spill_image ia = make_spill_image(t.layout, a);
  const spill_write_plan pa = store->prepare(ia);
  // Bob's capture sees alice's head in flight and does not stage it.
  const spill_image ib = make_spill_image(t.layout, b, {}, store.get());
  CHECK(ib.blocks.size() == 1);
  const spill_write_plan pb = store->prepare(ib);
  CHECK(pb.blocks_present == 2);
  t.env.no_space_after(10);
  const auto ra = store->commit(ia, pa, execute_spill_write(t.env, t.layout, ia, pa));
  CHECK(ra.failed);
  t.env.heal();
  const auto rb = store->commit(ib, pb, execute_spill_write(t.env, t.layout, ib, pb));
  CHECK(rb.failed);
  CHECK(store->manifest_count() == 0);
  CHECK(names_in(store->folder()).empty());
  CHECK(store->total_bytes() == 0);
  CHECK(store->stats().bytes_in_flight == 0);
}
