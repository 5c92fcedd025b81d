// End-to-end, issue 28's faults of the shared tier mid-run, with real servers and a real
// redis-server (test_http_remote.cpp has Redis stopped): Redis slowed past the fetch's deadline
// (a proxy adding 2 s to every chunk) and Redis flushed (FLUSHALL) between requests. Every
// request is answered, in a bounded time, from the cold path where Redis cannot help, with the
// answer a server without any cache gives (a session's next turn on its own replica, which resumes
// at its end anchor: the answer of that replica without the shared tier); the counters say what
// happened; once Redis is fast again, or filled again by the pushes, replicas resume from it.

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/chat_turns.hpp"
#include "tests/support/latency_proxy.hpp"
#include "tests/support/remote_stats.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

constexpr long grid = 32;  // --prefix-chunk: the disk tier's chunk and anchor lines

// A conversation's head: a long system prompt, one per project, then the user's message.
json agent_messages(const std::string& project, const std::string& user) {
  return json::array({{{"role", "system"}, {"content", filler(project + ": " + system_prompt, 1700)}},
                      {{"role", "user"}, {"content", user}}});
}

// A replica's flags, its shared tier the Redis (or the proxy) on `redis_port`.
std::vector<std::string> replica_flags(const temp_dir& dir, const std::string& name, int redis_port) {
  return {"--cache-dir",         dir.str() + "/" + name,
          "--prefix-chunk",      std::to_string(grid),
          "--disk-min-tokens",   "256",
          "--remote-cache",      "redis://127.0.0.1:" + std::to_string(redis_port),
          "--cache-salt",        "team-1",
          "--remote-timeout-ms", "500",
          "--admin-token",       "secret"};
}

struct timed_turn {
  turn_reply turn;
  double ms = 0;  // the request's wall time, as its client saw it
};
timed_turn timed_post(const http_server& s, const json& body) {
  const auto start = std::chrono::steady_clock::now();
  const http_reply r = send_turn(s, body);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return {read_turn(r), ms};
}

// How many keys Redis holds.
long redis_keys(const redis_server& redis) { return std::stol(redis.command({"DBSIZE"})); }

}  // namespace

TEST_CASE("Redis slowed past the fetch's deadline: answered cold in bounded time, used again once fast",
          "[http][remote]") {
  redis_server redis;
  REQUIRE_REDIS(redis);
  latency_proxy proxy(redis.port());
  REQUIRE(proxy.port() > 0);
  temp_dir dir("anchorage-http-remote-slow");
  const std::vector<std::string> projects = {"alpha", "beta"};

  // Replica A writes two conversations' heads to Redis directly.
  http_server a(replica_flags(dir, "a", redis.port()));
  for (const std::string& p : projects)
    CHECK(post_turn(a, chat_body(agent_messages(p, "List the files in src."), 11, 8)).x_cache["source"] ==
          "cold");
  const json da = disk_stats_of(a);
  REQUIRE(da["entries"] == 8);  // four anchors below each user message
  REQUIRE(da["remote"]["pushed_files"].get<long>() > 8);
  REQUIRE(da["remote"]["push_failures"] == 0);

  // Replica B reaches Redis through the proxy, which holds every chunk 2 s each way: each round
  // trip takes 4 s against B's 500 ms timeout and deadline.
  http_server ref({"--no-cache"});
  http_server b(replica_flags(dir, "b", proxy.port()));
  proxy.set_delay_ms(2000);
  for (const std::string& p : projects) {
    const json body = chat_body(agent_messages(p, "Read main.cpp and explain it."), 12, 8);
    const timed_turn cold = timed_post(ref, body);
    const timed_turn slow = timed_post(b, body);
    INFO(p << ": " << slow.ms << " ms on B through the slow proxy, " << cold.ms
           << " ms cold without a cache");
    CHECK(slow.turn.x_cache["source"] == "cold");
    CHECK(slow.turn.x_cache["resumed_at"] == 0);
    CHECK(slow.turn.message == cold.turn.message);
    CHECK(slow.ms < cold.ms + 3000);  // a fetch that waited for Redis's reply would take 4 s more
    // The fetch's part (restore_ms): here its first round trip times out (500 ms) and it gives up;
    // 1.5 s is the most the code allows, a round trip begun just before the deadline and the
    // anchor's two reads after it before the next check.
    CHECK(slow.turn.x_cache["restore_ms"].get<double>() < 1500);
  }
  // The first fetch timed out; the second, within the retry wait, did not ask.
  const json slow = disk_stats_of(b)["remote"];
  INFO(slow.dump());
  CHECK(proxy.connections() >= 1);
  CHECK(slow["fetches"] == 1);
  CHECK(slow["failures"] == 1);
  CHECK(slow["timeouts"] == 1);
  CHECK(slow["hits"] == 0);
  CHECK(slow["fetched_files"] == 0);
  CHECK(slow["backed_off"].get<long>() >= 1);
  CHECK(slow["push_failures"].get<long>() >= 1);  // B's own writes could not be pushed either
  CHECK(b.get("/health").status == 200);

  // Redis fast again. After the retry wait (remote_disk_options::retry_after_ms, 5 s, no flag),
  // B's local tiers cleared (its folder only: the remote level is shared), a new session with
  // the first head resumes on B from Redis.
  proxy.set_delay_ms(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(5500));
  REQUIRE(b.post("/v1/cache/clear?tier=all", "", {{"Authorization", "Bearer secret"}}).status == 200);
  REQUIRE(disk_stats_of(b)["entries"] == 0);
  const json body = chat_body(agent_messages(projects[0], "Now the tests."), 13, 8);
  const timed_turn back = timed_post(b, body);
  INFO(back.ms << " ms on B with the proxy at 0 ms");
  CHECK(back.turn.x_cache["source"] == "disk");
  CHECK(back.turn.x_cache["resumed_at"].get<long>() > 0);
  CHECK(back.turn.usage["prompt_tokens_details"]["cached_tokens"] == back.turn.x_cache["resumed_at"]);
  CHECK(back.turn.message == post_turn(ref, body).message);
  const json fast = disk_stats_of(b)["remote"];
  INFO(fast.dump());
  CHECK(fast["fetches"] == 2);
  CHECK(fast["hits"] == 1);
  CHECK(fast["failures"] == 1);  // none more
  CHECK(fast["fetched_files"].get<long>() > 1);
}

TEST_CASE("Redis flushed mid-run: a miss answered cold, refilled by the pushes, answers unchanged",
          "[http][remote]") {
  redis_server redis;
  REQUIRE_REDIS(redis);
  temp_dir dir("anchorage-http-remote-flush");
  http_server ref({"--no-cache"});

  // A session's first turn on replica A, pushed to Redis.
  http_server a(replica_flags(dir, "a", redis.port()));
  json messages = agent_messages("alpha", "List the files in src.");
  const json body1 = chat_body(messages, 11, 8);
  const turn_reply t1 = post_turn(a, body1);
  CHECK(t1.x_cache["source"] == "cold");
  CHECK(t1.message == post_turn(ref, body1).message);
  const json da1 = disk_stats_of(a);
  const long head = da1["longest_prefix"];
  const long pushed = da1["remote"]["pushed_files"];
  REQUIRE(pushed > 4);
  REQUIRE(redis_keys(redis) > 0);

  // Redis loses everything between the session's two turns.
  REQUIRE(redis.command({"FLUSHALL"}) == "OK");
  REQUIRE(redis_keys(redis) == 0);

  // The second turn on A: the answer (and where it resumed) of the same replica without a shared
  // tier serving the same two turns. A's own tiers serve it; the remote's miss is no failure.
  echo_turn(messages, t1, "Now read main.cpp, the file that starts the server, and tell me what it does.");
  const json body2 = chat_body(messages, 21, 8);
  const turn_reply t2 = post_turn(a, body2);
  {
    std::vector<std::string> flags = replica_flags(dir, "plain", redis.port());
    flags.erase(flags.begin() + 6, flags.begin() + 8);  // no --remote-cache
    REQUIRE(std::find(flags.begin(), flags.end(), "--remote-cache") == flags.end());
    http_server plain(flags);
    post_turn(plain, body1);
    const turn_reply p2 = post_turn(plain, body2);
    CHECK(t2.message == p2.message);
    CHECK(t2.x_cache["source"] == p2.x_cache["source"]);
    CHECK(t2.x_cache["resumed_at"] == p2.x_cache["resumed_at"]);
  }
  CHECK(t2.x_cache["source"] != "cold");
  const json ra2 = disk_stats_of(a)["remote"];
  INFO(ra2.dump());
  CHECK(ra2["failures"] == 0);
  CHECK(ra2["backed_off"] == 0);
  CHECK(ra2["hits"] == 0);

  // Replica B, a session with the same head: Redis has nothing, B answers cold, a miss and not a
  // failure, and pushes what it wrote.
  {
    http_server b(replica_flags(dir, "b", redis.port()));
    const json body = chat_body(agent_messages("alpha", "Read main.cpp and explain it."), 12, 8);
    const turn_reply tb = post_turn(b, body);
    CHECK(tb.x_cache["source"] == "cold");
    CHECK(tb.message == post_turn(ref, body).message);
    const json rb = disk_stats_of(b)["remote"];
    INFO(rb.dump());
    CHECK(rb["fetches"] == 1);
    CHECK(rb["misses"] == 1);
    CHECK(rb["hits"] == 0);
    CHECK(rb["failures"] == 0);
    CHECK(rb["backed_off"] == 0);
    CHECK(rb["pushed_files"].get<long>() > 4);
    CHECK(rb["push_failures"] == 0);
  }
  CHECK(redis_keys(redis) > 0);

  // A goes on with another conversation: its writes are pushed as before the flush.
  const json beta1 = chat_body(agent_messages("beta", "List the files in src."), 31, 8);
  CHECK(post_turn(a, beta1).x_cache["source"] == "cold");
  const json ra3 = disk_stats_of(a)["remote"];
  INFO(ra3.dump());
  CHECK(ra3["pushed_files"].get<long>() > pushed + 4);
  CHECK(ra3["push_failures"] == 0);

  // Replica C, which saw neither conversation, resumes both from what was pushed after the flush:
  // a new session of the second conversation (A's push), and the first one's next turn, moved
  // (its head as B pushed it again).
  http_server c(replica_flags(dir, "c", redis.port()));
  const json beta2 = chat_body(agent_messages("beta", "Read main.cpp and explain it."), 32, 8);
  const turn_reply c1 = post_turn(c, beta2);
  CHECK(c1.x_cache["source"] == "disk");
  CHECK(c1.x_cache["resumed_at"].get<long>() > 0);
  CHECK(c1.message == post_turn(ref, beta2).message);
  echo_turn(messages, t2, "And the tests?");
  const json body3 = chat_body(messages, 22, 8);
  const turn_reply c2 = post_turn(c, body3);
  CHECK(c2.x_cache["source"] == "disk");
  CHECK(c2.x_cache["resumed_at"] == head);
  CHECK(c2.message == post_turn(ref, body3).message);
  const json rc = disk_stats_of(c)["remote"];
  INFO(rc.dump());
  CHECK(rc["hits"] == 2);
  CHECK(rc["failures"] == 0);
}
