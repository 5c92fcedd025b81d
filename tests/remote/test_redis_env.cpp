// Redis as a file_env (runtime/remote/redis_env.hpp) against a real redis-server on loopback:
// file_env's contract (parts across boundaries, ranges, replace, list with tmp files, times,
// errors as values), the session spill's store running over it unchanged (written, found by a
// new store's scan, read back verified), a record swapped in Redis under a valid crc refused,
// and a server that goes away and comes back.
#include <catch2/catch.hpp>
#include <hiredis/hiredis.h>

#include <cerrno>
#include <chrono>
#include <numeric>

#include "runtime/remote/redis_env.hpp"
#include "runtime/spill/spill_codec.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/disk_store_fixture.hpp"
#include "tests/support/spill_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>((i * 131 + seed * 7) ^ (i >> 8));
  return b;
}

}  // namespace

TEST_CASE("parse_redis_url reads host, port, database, user and password", "[remote]") {
  redis_options o;
  CHECK(parse_redis_url("redis://cache.local:6380/2", o).empty());
  CHECK(o.host == "cache.local");
  CHECK(o.port == 6380);
  CHECK(o.db == 2);
  CHECK(o.password.empty());
  CHECK(parse_redis_url("redis://:s3cret@10.0.0.5", o).empty());
  CHECK(o.host == "10.0.0.5");
  CHECK(o.port == 6379);  // the URL named none: Redis's own
  CHECK(o.db == 0);
  CHECK(o.password == "s3cret");
  CHECK(o.username.empty());
  CHECK(parse_redis_url("redis://app:pw@h:7000", o).empty());
  CHECK(o.username == "app");
  CHECK(o.password == "pw");
  CHECK(o.port == 7000);
  const redis_options before = o;
  CHECK_FALSE(parse_redis_url("http://h:1", o).empty());
  CHECK_FALSE(parse_redis_url("redis://h:99999", o).empty());
  CHECK_FALSE(parse_redis_url("redis://h:1/x", o).empty());
  CHECK_FALSE(parse_redis_url("redis://", o).empty());
  CHECK_FALSE(parse_redis_url("redis://pw@h", o).empty());
  CHECK(o.host == before.host);  // a refused URL changes nothing
  CHECK(o.port == before.port);
}

TEST_CASE("redis_env keeps file_env's contract over a real Redis", "[remote]") {
  redis_server server;
  REQUIRE_REDIS(server);
  redis_options o = server.options("contract");
  o.part_bytes = 1000;  // many parts: every range below crosses part boundaries
  redis_env env(o);
  REQUIRE(env.make_dir("a/b"));

  const auto head = pattern(17, 1), body = pattern(4304, 2);  // 4,321 bytes: 5 parts, the last short
  REQUIRE(env.write_atomic("a/b", "x.blk", {{head.data(), head.size()}, {body.data(), body.size()}}));
  std::vector<unsigned char> whole(head);
  whole.insert(whole.end(), body.begin(), body.end());
  CHECK(env.size("a/b/x.blk") == std::optional<std::uint64_t>(4321));

  std::vector<unsigned char> got(whole.size());
  REQUIRE(env.read("a/b/x.blk", 0, got.data(), got.size()));
  CHECK(got == whole);
  for (const auto& [off, n] : std::vector<std::pair<std::size_t, std::size_t>>{
           {999, 2}, {1000, 1000}, {1, 3000}, {4000, 321}, {4320, 1}, {4321, 0}}) {
    std::vector<unsigned char> part(n);
    INFO("offset " << off << ", " << n << " bytes");
    REQUIRE(env.read("a/b/x.blk", off, part.data(), n));
    CHECK(std::equal(part.begin(), part.end(), whole.begin() + static_cast<long>(off)));
  }
  unsigned char one = 0;
  const file_result past = env.read("a/b/x.blk", 4321, &one, 1);
  CHECK_FALSE(past.ok);
  CHECK(past.error == ERANGE);
  const file_result missing = env.read("a/b/none.blk", 0, &one, 1);
  CHECK_FALSE(missing.ok);
  CHECK(missing.error == ENOENT);
  CHECK_FALSE(env.size("a/b/none.blk"));

  // A replacement is whole: the new bytes, the new size, one name in the listing.
  const auto small = pattern(10, 3);
  REQUIRE(env.write_atomic("a/b", "x.blk", {{small.data(), small.size()}}));
  CHECK(env.size("a/b/x.blk") == std::optional<std::uint64_t>(10));
  std::vector<unsigned char> again(10);
  REQUIRE(env.read("a/b/x.blk", 0, again.data(), 10));
  CHECK(again == small);
  REQUIRE(env.write_atomic("a/b", "empty.blk", {}));
  CHECK(env.size("a/b/empty.blk") == std::optional<std::uint64_t>(0));
  CHECK(env.list("a/b") == std::vector<std::string>{"empty.blk", "x.blk"});
  CHECK(env.list("a") == std::vector<std::string>{"b"});  // subdirectories listed, as POSIX does

  // Times: set on a file that exists, refused on one that does not (nothing created).
  CHECK(env.modified_s("a/b/x.blk").has_value());
  REQUIRE(env.set_modified_s("a/b/x.blk", 1234567));
  CHECK(env.modified_s("a/b/x.blk") == std::optional<std::int64_t>(1234567));
  CHECK_FALSE(env.set_modified_s("a/b/none.blk", 5));
  CHECK_FALSE(env.size("a/b/none.blk"));

  // The asynchronous forms.
  const io_ticket w = env.submit_write_atomic("a/b", "y.blk", {{body.data(), body.size()}});
  const io_ticket r1 = env.submit_read("a/b/x.blk", 10);
  const io_ticket r2 = env.submit_read("a/b/none.blk", 1);
  CHECK(env.wait_write(w));
  file_buffer b1, b2;
  REQUIRE(env.wait_read(r1, b1));
  CHECK(std::vector<unsigned char>(b1.data(), b1.data() + b1.size()) == small);
  CHECK_FALSE(env.wait_read(r2, b2));
  CHECK(b2.size() == 0);

  // remove: true once, then false; the listing follows.
  CHECK(env.remove("a/b/y.blk"));
  CHECK_FALSE(env.remove("a/b/y.blk"));
  CHECK(env.list("a/b") == std::vector<std::string>{"empty.blk", "x.blk"});
  // Another namespace sees none of it.
  redis_env other(server.options("another"));
  CHECK_FALSE(other.size("a/b/x.blk"));
  CHECK(other.list("a/b").empty());
}

TEST_CASE("redis_env: a server that goes away is a failure with a message, and it comes back", "[remote]") {
  redis_server server;
  REQUIRE_REDIS(server);
  redis_env env(server.options("away"));
  const auto b = pattern(3000, 4);
  REQUIRE(env.write_atomic("d", "f.blk", {{b.data(), b.size()}}));
  server.stop();
  const file_result w = env.write_atomic("d", "g.blk", {{b.data(), b.size()}});
  CHECK_FALSE(w.ok);
  CHECK(w.error != 0);
  CHECK(w.message.find("redis") != std::string::npos);
  std::vector<unsigned char> got(b.size());
  CHECK_FALSE(env.read("d/f.blk", 0, got.data(), got.size()));
  CHECK(env.list("d").empty());
  CHECK_FALSE(env.make_dir("d"));
  CHECK_FALSE(env.free_bytes("d"));
  // A new server on the same port (no persistence: empty), dialled again on the next call.
  server.start();
  REQUIRE(server.available());
  CHECK(env.make_dir("d"));
  CHECK_FALSE(env.size("d/f.blk"));
  REQUIRE(env.write_atomic("d", "g.blk", {{b.data(), b.size()}}));
  REQUIRE(env.read("d/g.blk", 0, got.data(), got.size()));
  CHECK(got == b);
}

TEST_CASE("redis_env: a server that stops answering is a timeout within the deadline, then it is used again",
          "[remote]") {
  redis_server server;
  REQUIRE_REDIS(server);
  redis_options o = server.options("slow");
  o.timeout_ms = 300;
  redis_env env(o);
  const auto b = pattern(2000, 5);
  REQUIRE(env.write_atomic("d", "f.blk", {{b.data(), b.size()}}));
  server.freeze();
  std::vector<unsigned char> got(b.size());
  const auto t0 = std::chrono::steady_clock::now();
  const file_result r = env.read("d/f.blk", 0, got.data(), got.size());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  server.thaw();
  CHECK_FALSE(r.ok);
  CHECK(r.error == ETIMEDOUT);
  CHECK(r.message.find("HMGET") != std::string::npos);
  CHECK(s >= 0.25);
  CHECK(s < 3.0);
  // The connection was dropped: the next call dials again and reads the file whole.
  REQUIRE(env.read("d/f.blk", 0, got.data(), got.size()));
  CHECK(got == b);
}

TEST_CASE("the spill's store runs over Redis unchanged: written, scanned by a new store, read back verified",
          "[remote][spill]") {
  redis_server server;
  REQUIRE_REDIS(server);
  redis_options o = server.options("spill");
  o.part_bytes = 512;  // the test layout's blocks span several parts
  const state_layout layout = spill_test_layout();
  spill_store_options so;
  so.dir = "tenant-a/spill";
  so.budget_bytes = 1ULL << 30;

  const spill_conversation alice = make_conversation(layout, "alice", 19, 4);
  const spill_conversation bob = make_conversation(layout, "bob", 19, 9);
  spill_image ia = make_spill_image(layout, alice, {{4, 8}}), ib = make_spill_image(layout, bob);
  {
    redis_env env(o);
    spill_store store(env, layout, so);
    store.scan();
    REQUIRE_FALSE(write_spill(store, env, ia).failed);
    REQUIRE_FALSE(write_spill(store, env, ib).failed);
  }
  redis_env env(o);
  spill_store store(env, layout, so);
  const spill_scan_report rep = store.scan();
  CHECK(rep.tmp_reaped == 0);
  REQUIRE(store.manifest_count() == 2);
  auto ra = store.read_verified(ia.manifest.id);
  INFO((ra ? std::string() : ra.error().error()));
  REQUIRE(ra);
  CHECK(ra->manifest.tokens == alice.tokens);
  CHECK(ra->rows() == alice.rows);
  REQUIRE(ra->anchors.size() == 3);
  CHECK(ra->anchors.back() == alice.sections(layout, alice.tokens.size(), true));

  SECTION("a block swapped with another conversation's, each a valid record, is refused") {
    // Both records are whole (their crcs hold): only the check against the manifest's names
    // and sums tells them apart.
    const std::string ka =
        env.file_key(join_path(store.folder(), spill_block_file(ia.manifest.blocks[1].name)));
    const std::string kb =
        env.file_key(join_path(store.folder(), spill_block_file(ib.manifest.blocks[1].name)));
    redisContext* c = redisConnect("127.0.0.1", server.port());
    REQUIRE(c);
    REQUIRE(c->err == 0);
    for (const auto& [from, to] :
         std::vector<std::pair<std::string, std::string>>{{ka, "swap-tmp"}, {kb, ka}, {"swap-tmp", kb}}) {
      auto* r = static_cast<redisReply*>(redisCommand(c, "RENAME %s %s", from.c_str(), to.c_str()));
      REQUIRE(r);
      CHECK(r->type == REDIS_REPLY_STATUS);
      freeReplyObject(r);
    }
    redisFree(c);
    for (const auto id : {ia.manifest.id, ib.manifest.id}) {
      auto bad = store.read_verified(id);
      REQUIRE_FALSE(bad);
      INFO(bad.error().error());
      CHECK(bad.error().error().find("wrong_place") != std::string::npos);  // the record's own name
    }
  }
  SECTION("a writer that died between its parts leaves a tmp that the next store's scan removes") {
    const std::string tmp = join_path(store.folder(), spill_block_file(0xabcdefULL)) + tmp_suffix;
    const auto [dir, name] = std::make_pair(store.folder(), tmp.substr(store.folder().size() + 1));
    const std::size_t files = env.list(dir).size();
    redisContext* c = redisConnect("127.0.0.1", server.port());
    REQUIRE(c);
    for (auto* r :
         {static_cast<redisReply*>(redisCommand(c, "SADD %s %s", ("spill:d:" + dir).c_str(), name.c_str())),
          static_cast<redisReply*>(redisCommand(c, "HSET %s 0 partial", env.file_key(tmp).c_str()))}) {
      REQUIRE(r);
      CHECK(r->type == REDIS_REPLY_INTEGER);
      freeReplyObject(r);
    }
    redisFree(c);
    CHECK(env.list(dir).size() == files + 1);
    spill_store after(env, layout, so);
    CHECK(after.scan().tmp_reaped == 1);
    CHECK_FALSE(env.size(tmp));
    CHECK(env.list(dir).size() == files);
    auto r = after.read_verified(ia.manifest.id);
    REQUIRE(r);
    CHECK(r->rows() == alice.rows);
  }
  SECTION("a record that Redis evicted is a failed read, not a wrong one") {
    const std::string path = join_path(store.folder(), spill_block_file(ib.manifest.blocks[0].name));
    redisContext* c = redisConnect("127.0.0.1", server.port());
    REQUIRE(c);
    auto* r = static_cast<redisReply*>(redisCommand(c, "DEL %s", env.file_key(path).c_str()));
    REQUIRE(r);
    CHECK(r->integer == 1);
    freeReplyObject(r);
    redisFree(c);
    CHECK_FALSE(store.read_verified(ib.manifest.id));
    auto again = store.read_verified(ia.manifest.id);  // alice's files are her own
    REQUIRE(again);
    CHECK(again->rows() == alice.rows);
  }
}

TEST_CASE(
    "the disk tier's store runs over Redis: a prefix restored from it equals a cold prefill bit for bit",
    "[remote][disk]") {
  redis_server server;
  REQUIRE_REDIS(server);
  bench b;  // the tiny preset; its env is not used here
  redis_options o = server.options("disk");
  o.part_bytes = 64 << 10;  // a chunk record spans several parts
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 10);
  auto cold = prefilled(b.c, tokens, line);
  {
    redis_env env(o);
    auto writer = b.open(env, options_in("tenant-a/disk"));
    REQUIRE(writer->store(slice(tokens, 0, line), cold->cache_state()));
    CHECK(writer->chunk_count() == 4);
  }
  redis_env env(o);
  disk_store reader(env, b.layout, b.clock, options_in("tenant-a/disk"));
  const disk_scan_report report = reader.scan();
  CHECK(report.indexed == 5);  // 4 chunks and the anchor in its namespace's folder
  CHECK(report.damaged_removed == 0);
  const auto hit = reader.find(tokens);
  REQUIRE(hit);
  CHECK(hit->line == line);
  auto fresh = make_engine(b.c);
  const auto r = reader.restore(*hit, tokens, fresh->cache_state());
  INFO(r.error().error());
  REQUIRE(bool(r));
  require_same_as_cold(*fresh, *cold, line);
  fresh->prefill(slice(tokens, line, tokens.size()));
  cold->prefill(slice(tokens, line, tokens.size()));
  CHECK(same_bytes(fresh->last_logits(), cold->last_logits()));

  SECTION("a chunk damaged in Redis (one byte of a part) is refused and the engine is untouched") {
    const std::string key = env.file_key(chunk_file(reader, tokens, 2 * b.g));
    redisContext* c = redisConnect("127.0.0.1", server.port());
    REQUIRE(c);
    const std::string last = std::to_string((b.cfb - 1) / o.part_bytes);  // the rows' end
    auto* got = static_cast<redisReply*>(redisCommand(c, "HGET %s %s", key.c_str(), last.c_str()));
    REQUIRE(got);
    REQUIRE(got->type == REDIS_REPLY_STRING);
    std::string part(got->str, got->len);
    freeReplyObject(got);
    part[part.size() / 2] = static_cast<char>(part[part.size() / 2] ^ 0x10);
    auto* set = static_cast<redisReply*>(
        redisCommand(c, "HSET %s %s %b", key.c_str(), last.c_str(), part.data(), part.size()));
    REQUIRE(set);
    freeReplyObject(set);
    redisFree(c);
    auto other = prefilled(b.c, test_tokens(50, 7), 50);
    const untouched before(*other, 50);
    const auto bad = reader.restore(*hit, tokens, other->cache_state());
    CHECK_FALSE(bool(bad));
    before.check();
  }
}
