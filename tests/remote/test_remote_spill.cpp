// The session spill's part of the shared level (runtime/remote/remote_spill.cpp) against a real
// redis-server on loopback: a conversation spilled on replica A and pushed is fetched by replica
// B for a prompt of its session that continues it, adopted by B's spill store and read back
// byte for byte; a newer spill replaces an older one; a record altered or swapped in Redis is
// never restored; another session, another head or a prompt that would not start deeper
// fetches nothing; a fetch over its budget copies nothing.
#include <catch2/catch.hpp>

#include <filesystem>

#include "runtime/remote/remote_disk.hpp"
#include "runtime/spill/spill_codec.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/spill_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace fs = std::filesystem;

namespace {

// One replica: its spill store on its own folder, its own connection to the shared Redis.
struct spill_replica {
  spill_bench bench;
  std::unique_ptr<spill_store> store = bench.open();
  redis_env remote;
  remote_disk shared;
  explicit spill_replica(const redis_options& o) : remote(o), shared(remote, bench.layout.fingerprint) {}

  remote_push_report push(std::uint64_t id) {
    return shared.push_spill(bench.env, store->folder(), store->paths_of(id));
  }
  std::shared_ptr<fetched_spill> fetch(const std::string& session, const std::vector<token_id>& prompt,
                                       remote_fetch_report& r, std::uint64_t budget = 0) {
    return shared.fetch_spill(bench.env, store->folder(), bench.layout, session, prompt, 0, budget, r);
  }
  // The key of the spill file `name` in Redis.
  std::string key_of(const std::string& name) {
    return remote.file_key(shared.names().folder() + "/" + spill_format::folder_name + "/" + name);
  }
};

std::size_t files_in(const std::string& folder) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    (void)e;
    ++n;
  }
  return n;
}

spill_image_options anchors_at(std::vector<std::size_t> grid, std::uint64_t sequence = 1) {
  spill_image_options o;
  o.grid_anchors = std::move(grid);
  o.sequence = sequence;
  return o;
}

}  // namespace

TEST_CASE("a conversation spilled on replica A is fetched, adopted and read back on replica B",
          "[remote][spill]") {
  redis_server server;
  REQUIRE_REDIS(server);
  const redis_options o = server.options("anchorage:s");
  spill_replica a(o), b(o);
  const auto c = make_conversation(a.bench.layout, "alice", 10, 5);
  const spill_image img = make_spill_image(a.bench.layout, c, anchors_at({4, 8}));
  const std::uint64_t id = img.manifest.id;
  REQUIRE_FALSE(a.bench.spill(*a.store, img).failed);

  const remote_push_report pushed = a.push(id);
  INFO(pushed.error);
  CHECK(pushed.written == 3 + 3 + 1);  // three blocks, three anchors, the manifest
  CHECK(pushed.failed == 0);
  CHECK(a.shared.counters().spill_pushes == 1);

  // The conversation's next turn: its tokens and more.
  std::vector<token_id> prompt = c.tokens;
  prompt.insert(prompt.end(), {7, 8, 9});
  remote_fetch_report r;
  auto f = b.fetch("alice", prompt, r);
  INFO(r.error);
  REQUIRE(f);
  CHECK(f->id == id);
  CHECK(f->written.size() == 6);
  CHECK(b.shared.counters().spill_hits == 1);
  std::string why;
  REQUIRE(b.store->adopt(f->id, f->manifest, f->written, why));
  REQUIRE(b.store->find(id));
  auto read = b.store->read_verified(id);
  REQUIRE(read);
  CHECK(read->rows() == c.rows);
  REQUIRE(read->anchors.size() == 3);
  CHECK(read->anchors[0] == c.sections(a.bench.layout, 4, false));
  CHECK(read->anchors[1] == c.sections(a.bench.layout, 8, false));
  CHECK(read->anchors[2] == c.sections(a.bench.layout, 10, true));
  CHECK(b.store->total_bytes() == a.store->total_bytes());

  SECTION("asked again, the folder's own copy is what Redis holds: nothing is fetched") {
    remote_fetch_report again;
    CHECK_FALSE(b.fetch("alice", prompt, again));
    CHECK(b.shared.counters().spill_hits == 1);
  }
  SECTION("another session, another head, or a prompt it would not start deeper: nothing") {
    remote_fetch_report r2;
    CHECK_FALSE(b.fetch("bob", prompt, r2));
    std::vector<token_id> other = prompt;
    other[1] += 1;  // the head differs: another conversation id
    CHECK_FALSE(b.fetch("alice", other, r2));
    CHECK(b.shared.counters().failures == 0);
    CHECK(b.shared.counters().spill_hits == 1);
  }
  SECTION("a newer spill of the conversation replaces the older one") {
    auto longer = c;
    longer.grow(a.bench.layout, 6);
    const spill_image img2 =
        make_spill_image(a.bench.layout, longer, anchors_at({4, 8, 12}, 2), a.store.get());
    REQUIRE(img2.manifest.id == id);  // the same session and head
    REQUIRE_FALSE(a.bench.spill(*a.store, img2).failed);
    const remote_push_report p2 = a.push(id);
    CHECK(p2.failed == 0);
    CHECK(p2.skipped == 2 + 2);  // the two whole blocks and the two grid anchors Redis held
    std::vector<token_id> next = longer.tokens;
    next.push_back(3);
    remote_fetch_report r2;
    auto f2 = b.fetch("alice", next, r2);
    REQUIRE(f2);
    REQUIRE(b.store->adopt(f2->id, f2->manifest, f2->written, why));
    auto read2 = b.store->read_verified(id);
    REQUIRE(read2);
    CHECK(read2->manifest.tokens == longer.tokens);
    CHECK(read2->rows() == longer.rows);
    // The older one is no longer adopted over it.
    CHECK_FALSE(b.store->adopt(f->id, f->manifest, {}, why));
  }
}

TEST_CASE("a spill record altered in Redis is never restored, and a fetch over its budget copies nothing",
          "[remote][spill]") {
  redis_server server;
  REQUIRE_REDIS(server);
  const redis_options o = server.options("anchorage:s");
  spill_replica a(o), b(o);
  const auto c = make_conversation(a.bench.layout, "carol", 12, 9);
  const spill_image img = make_spill_image(a.bench.layout, c, anchors_at({4, 8}));
  const std::uint64_t id = img.manifest.id;
  REQUIRE_FALSE(a.bench.spill(*a.store, img).failed);
  REQUIRE(a.push(id).failed == 0);
  std::vector<token_id> prompt = c.tokens;
  prompt.push_back(1);
  const std::string block1 = b.key_of(spill_block_file(img.manifest.blocks[1].name));
  const std::string block0 = b.key_of(spill_block_file(img.manifest.blocks[0].name));
  std::string why;

  SECTION("a flipped byte in a block's rows: adopted on its header, refused by the read, deleted") {
    std::string part = server.command({"HGET", block1, "0"});
    const std::size_t at = part.size() - 3;  // inside the rows, past the header
    part[at] = static_cast<char>(part[at] ^ 0x01);
    server.command({"HSET", block1, "0", part});
    remote_fetch_report r;
    auto f = b.fetch("carol", prompt, r);
    REQUIRE(f);
    REQUIRE(b.store->adopt(f->id, f->manifest, f->written, why));
    auto read = b.store->read_verified(id);
    CHECK_FALSE(read);
    CHECK_FALSE(b.store->find(id));  // the damaged block went, with the manifest naming it
  }
  SECTION("another block's bytes under this block's key: refused before it is indexed, its files removed") {
    server.command({"COPY", block0, block1, "REPLACE"});
    remote_fetch_report r;
    auto f = b.fetch("carol", prompt, r);
    REQUIRE(f);  // the same size: only its header tells
    CHECK_FALSE(b.store->adopt(f->id, f->manifest, f->written, why));
    CHECK(why.find("failed its checks") != std::string::npos);
    CHECK_FALSE(b.store->find(id));
    CHECK(files_in(b.store->folder()) == 0);
  }
  SECTION("the manifest altered: the fetch refuses it, copies nothing") {
    const std::string man = b.key_of(spill_manifest_file(id));
    std::string part = server.command({"HGET", man, "0"});
    part[part.size() / 2] = static_cast<char>(part[part.size() / 2] ^ 0x40);
    server.command({"HSET", man, "0", part});
    remote_fetch_report r;
    CHECK_FALSE(b.fetch("carol", prompt, r));
    CHECK(b.shared.counters().failures == 1);
    CHECK(files_in(b.store->folder()) == 0);
  }
  SECTION("a block evicted from Redis: nothing fetched, what was written removed") {
    server.command({"DEL", block1});
    remote_fetch_report r;
    CHECK_FALSE(b.fetch("carol", prompt, r));
    CHECK(b.shared.counters().failures == 1);
    CHECK(files_in(b.store->folder()) == 0);
  }
  SECTION("over the fetch's budget: refused before a byte is copied") {
    remote_fetch_report r;
    CHECK_FALSE(b.fetch("carol", prompt, r, 64));
    CHECK(b.shared.counters().refused_budget == 1);
    CHECK(files_in(b.store->folder()) == 0);
  }
}
