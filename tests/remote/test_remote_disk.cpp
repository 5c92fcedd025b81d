// The disk tier's shared level (runtime/remote/remote_disk.hpp) against a real redis-server on
// loopback: two replicas' stores, each on its own folder, sharing one Redis. A prefix written on
// replica A and pushed behind is fetched by replica B on a local miss and restored there equal
// to a cold prefill bit for bit; two salts never share a record; a record damaged or swapped in
// Redis is never restored; Redis gone or frozen is the cold path, counted.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "runtime/disk/disk_codec.hpp"
#include "runtime/remote/remote_disk.hpp"
#include "tests/support/disk_store_fixture.hpp"
#include "tests/support/redis_server.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// One replica: a disk store on its own folder and its own connection to the shared Redis.
struct replica {
  redis_env remote;
  std::unique_ptr<disk_store> store;
  remote_disk shared;
  replica(bench& b, const redis_options& o, const std::string& name, remote_disk_options d = quick_retry())
      : remote(o),
        store(b.open(options_in(b.dir.str() + "/" + name))),
        shared(remote, b.layout.fingerprint, d) {}
  // A failure's retry wait short enough for a test to outlast.
  static remote_disk_options quick_retry() {
    remote_disk_options d;
    d.retry_after_ms = 300;
    return d;
  }
};

// A cold prefill of tokens[0, line) stored on `r` and pushed; returns the engine.
std::unique_ptr<engine> store_and_push(bench& b, replica& r, const std::vector<token_id>& tokens,
                                       std::size_t line) {
  auto cold = prefilled(b.c, tokens, line);
  REQUIRE(r.store->store(slice(tokens, 0, line), cold->cache_state()));
  const remote_push_report pushed = r.shared.push_store(*r.store);
  INFO(pushed.error);
  REQUIRE(pushed.failed == 0);
  REQUIRE(pushed.written == line / b.g + 1);  // its chunks and the anchor
  return cold;
}

}  // namespace

TEST_CASE("a prefix written on replica A is fetched by replica B from Redis and restores as a cold prefill",
          "[remote][disk]") {
  redis_server server;
  REQUIRE_REDIS(server);
  bench b;
  const std::size_t line = 4 * b.g;
  const auto tokens = test_tokens(line + 10);
  redis_options o = server.options("anchorage:tenant-a");
  o.part_bytes = 64 << 10;  // a chunk spans several parts
  replica a(b, o, "a");
  replica rb(b, o, "b");
  auto cold = store_and_push(b, a, tokens, line);
  CHECK(a.shared.push_store(*a.store).skipped == 5);  // already there: nothing sent again

  REQUIRE_FALSE(rb.store->find(tokens));
  const remote_fetch_report got = rb.shared.fetch(*rb.store, tokens);
  INFO(got.error);
  CHECK(got.line == line);
  CHECK(got.files == 5);
  CHECK(got.bytes == 4 * b.cfb + b.afb(line));
  CHECK(rb.shared.counters().hits == 1);
  const auto hit = rb.store->find(tokens);
  REQUIRE(hit);
  CHECK(hit->line == line);
  CHECK(exists(chunk_file(*rb.store, tokens, 2 * b.g)));  // written locally: the next restart keeps it

  auto fresh = make_engine(b.c);
  const auto r = rb.store->restore(*hit, tokens, fresh->cache_state());
  INFO(r.error().error());
  REQUIRE(bool(r));
  require_same_as_cold(*fresh, *cold, line);
  fresh->prefill(slice(tokens, line, tokens.size()));
  cold->prefill(slice(tokens, line, tokens.size()));
  CHECK(same_bytes(fresh->last_logits(), cold->last_logits()));

  SECTION("a second ask finds it locally and does not go to Redis") {
    CHECK(rb.shared.fetch(*rb.store, tokens).line == 0);
    CHECK(rb.shared.counters().fetches == 1);
  }
  SECTION("a replica holding a shorter prefix copies only the chunks it lacks") {
    replica c(b, o, "c");
    auto shorter = prefilled(b.c, tokens, 2 * b.g);
    REQUIRE(c.store->store(slice(tokens, 0, 2 * b.g), shorter->cache_state()));
    const remote_fetch_report more = c.shared.fetch(*c.store, tokens);
    CHECK(more.line == line);
    CHECK(more.files == 3);  // chunks 3 and 4, the anchor
  }
}

TEST_CASE("two tenants' salts never share a record in Redis", "[remote][disk]") {
  redis_server server;
  REQUIRE_REDIS(server);
  bench b;
  const std::size_t line = 2 * b.g;
  const auto tokens = test_tokens(line + 3);
  replica a(b, server.options("anchorage:tenant-a"), "a");
  replica other(b, server.options("anchorage:tenant-b"), "b");
  store_and_push(b, a, tokens, line);

  const remote_fetch_report got = other.shared.fetch(*other.store, tokens);
  CHECK(got.line == 0);
  CHECK(got.error.empty());
  CHECK(other.shared.counters().misses == 1);
  CHECK_FALSE(other.store->find(tokens));
  // The same prompt, the same engine: the other salt's keys hold nothing of the first's.
  CHECK(other.remote.list(other.shared.names().folder()).empty());
  CHECK(a.remote.list(a.shared.names().folder()).size() == 3);  // two chunks and n-_
}

TEST_CASE("a record altered in Redis is never restored", "[remote][disk]") {
  redis_server server;
  REQUIRE_REDIS(server);
  bench b;
  const std::size_t line = 3 * b.g;
  const auto tokens = test_tokens(line + 5);
  const redis_options o = server.options("anchorage:t");
  replica a(b, o, "a");
  replica rb(b, o, "b");
  store_and_push(b, a, tokens, line);
  const std::string chunk2 =
      rb.remote.file_key(rb.shared.names().chunk_path(prefix_hash(tokens.data(), 2 * b.g)));
  const std::string chunk1 =
      rb.remote.file_key(rb.shared.names().chunk_path(prefix_hash(tokens.data(), b.g)));

  SECTION("a flipped byte in a chunk's rows: fetched, then refused by the restore, the engine untouched") {
    std::string part = server.command({"HGET", chunk2, "0"});
    REQUIRE_FALSE(part.empty());
    const std::size_t at = part.size() - 100;  // inside the rows, past the header
    part[at] = static_cast<char>(part[at] ^ 0x01);
    server.command({"HSET", chunk2, "0", part});

    const remote_fetch_report fetched = rb.shared.fetch(*rb.store, tokens);
    CHECK(fetched.line == line);  // its header is intact: indexed, to be verified on read
    const auto hit = rb.store->find(tokens);
    REQUIRE(hit);
    auto other = prefilled(b.c, test_tokens(40, 12), 40);
    const untouched before(*other, 40);
    CHECK_FALSE(bool(rb.store->restore(*hit, tokens, other->cache_state())));
    before.check();
    CHECK_FALSE(rb.store->find(tokens));  // the broken chain is gone locally
  }
  SECTION("another record's bytes under this record's key: refused before it is indexed") {
    server.command({"COPY", chunk1, chunk2, "REPLACE"});
    const remote_fetch_report fetched = rb.shared.fetch(*rb.store, tokens);
    CHECK(fetched.line == 0);
    CHECK(rb.shared.counters().failures == 1);
    CHECK_FALSE(rb.store->find(tokens));
    CHECK_FALSE(exists(chunk_file(*rb.store, tokens, 2 * b.g)));
  }
  SECTION("an anchor swapped for another prompt's: its chain does not match, nothing fetched") {
    const auto other_tokens = test_tokens(line + 5, 11);
    store_and_push(b, a, other_tokens, line);
    const std::string mine =
        rb.remote.file_key(rb.shared.names().anchor_path("", prefix_hash(tokens.data(), line)));
    const std::string theirs =
        rb.remote.file_key(rb.shared.names().anchor_path("", prefix_hash(other_tokens.data(), line)));
    server.command({"COPY", theirs, mine, "REPLACE"});
    const remote_fetch_report fetched = rb.shared.fetch(*rb.store, tokens);
    CHECK(fetched.line == 0);
    CHECK(rb.shared.counters().failures == 1);
    CHECK_FALSE(rb.store->find(tokens));
  }
}

TEST_CASE("Redis gone or frozen: a fetch is the cold path within its deadline, counted", "[remote][disk]") {
  redis_server server;
  REQUIRE_REDIS(server);
  bench b;
  const std::size_t line = 2 * b.g;
  const auto tokens = test_tokens(line + 3);
  const redis_options o = server.options("anchorage:t");
  replica a(b, o, "a");
  replica rb(b, o, "b");
  store_and_push(b, a, tokens, line);

  SECTION("stopped") {
    server.stop();
    const remote_fetch_report got = rb.shared.fetch(*rb.store, tokens);
    CHECK(got.line == 0);
    CHECK_FALSE(got.error.empty());
    CHECK(rb.shared.counters().failures == 1);
    // Within the retry wait Redis is not asked again: nothing to wait for, counted.
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(rb.shared.fetch(*rb.store, tokens).line == 0);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(100));
    CHECK(rb.shared.counters().failures == 1);
    CHECK(rb.shared.counters().backed_off == 1);
    // A push fails its first file and sends no other (each would wait on Redis too).
    const remote_push_report down = a.shared.push_store(*a.store);
    CHECK(down.failed == 3);
    CHECK(down.written == 0);
    server.start();                                               // empty: it keeps nothing on disk
    std::this_thread::sleep_for(std::chrono::milliseconds(350));  // past the retry wait
    REQUIRE(a.shared.push_store(*a.store).written == 3);
    CHECK(rb.shared.fetch(*rb.store, tokens).line == line);  // back: used again
  }
  SECTION("frozen") {
    redis_options quick = o;
    quick.timeout_ms = 300;
    redis_env frozen(quick);
    remote_disk shared_frozen(frozen, b.layout.fingerprint);
    REQUIRE(frozen.ping().ok);
    server.freeze();
    const auto t0 = std::chrono::steady_clock::now();
    const remote_fetch_report got = shared_frozen.fetch(*rb.store, tokens);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    server.thaw();
    CHECK(got.line == 0);
    CHECK(shared_frozen.counters().timeouts == 1);
    CHECK(s < 3.0);
    CHECK_FALSE(rb.store->find(tokens));
  }
  SECTION("frozen, with a reply timeout longer than the fetch's deadline: the fetch ends at its deadline") {
    redis_options slow = o;
    slow.timeout_ms = 3000;  // each call alone could wait this long
    redis_env frozen(slow);
    remote_disk_options d;
    d.fetch_deadline_ms = 300;
    remote_disk shared_frozen(frozen, b.layout.fingerprint, d);
    REQUIRE(frozen.ping().ok);
    server.freeze();
    const auto t0 = std::chrono::steady_clock::now();
    const remote_fetch_report got = shared_frozen.fetch(*rb.store, tokens);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    server.thaw();
    INFO(got.error);
    CHECK(got.line == 0);
    CHECK(shared_frozen.counters().timeouts == 1);
    CHECK(s < 0.9);  // 0.3 s and the call's own overhead, not 3 s per call
    CHECK(s >= 0.25);
    // The deadline is the fetch's only: after it, calls wait timeout_ms again.
    CHECK(frozen.ping().ok);
  }
}

TEST_CASE("a push sends an anchor only with its whole chain, and anchor_files names each anchor's files",
          "[remote][disk]") {
  redis_server server;
  REQUIRE_REDIS(server);
  bench b;
  const std::size_t line = 3 * b.g;
  const auto tokens = test_tokens(line + 5);
  replica a(b, server.options("anchorage:t"), "a");
  auto cold = prefilled(b.c, tokens, line);
  REQUIRE(a.store->store(slice(tokens, 0, line), cold->cache_state()));

  const std::vector<std::string> files = anchor_files(*a.store, tokens, "", {line});
  REQUIRE(files.size() == 4);  // three chunks, then the anchor
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(files[i] == a.store->names().chunk_path(chunk_hashes(tokens, line, b.g)[i]));
  CHECK(files[3] == a.store->names().anchor_path("", chunk_hashes(tokens, line, b.g).back()));
  CHECK(anchor_files(*a.store, tokens, "", {b.g}).empty());        // no anchor there
  CHECK(anchor_files(*a.store, tokens, "", {line + 1}).empty());   // not a grid line
  CHECK(anchor_files(*a.store, tokens, "other", {line}).empty());  // another namespace's

  SECTION("a chunk gone locally: neither it nor the anchor reaches Redis") {
    REQUIRE(a.store->env().remove(files[1]));
    const remote_push_report r = a.shared.push(a.store->env(), a.store->folder(), files);
    CHECK(r.written == 2);
    CHECK(r.failed == 2);
    replica rb(b, server.options("anchorage:t"), "b");
    CHECK(rb.shared.fetch(*rb.store, tokens).line == 0);
    CHECK(rb.shared.counters().misses == 1);  // no anchor in Redis: a miss, not a failure
  }
  SECTION("whole: every file, and a second push sends none") {
    CHECK(a.shared.push(a.store->env(), a.store->folder(), files).written == 4);
    CHECK(a.shared.push(a.store->env(), a.store->folder(), files).skipped == 4);
  }
}

TEST_CASE("a tenant's salt becomes a key namespace that names neither the salt nor another's", "[remote]") {
  CHECK(remote_namespace("") == "anchorage");
  const std::string a = remote_namespace("tenant-a");
  const std::string b = remote_namespace("tenant-b");
  CHECK(a.size() == std::string("anchorage:").size() + 32);
  CHECK(a.rfind("anchorage:", 0) == 0);
  CHECK(a != b);
  CHECK(a.find("tenant") == std::string::npos);
  CHECK(remote_namespace("tenant-a") == a);
  redis_options o;
  o.host = "10.0.0.5";
  o.port = 6380;
  o.db = 2;
  o.password = "secret";
  CHECK(remote_target(o) == "10.0.0.5:6380/2");
}
