// End-to-end: two replicas (two whole servers, each with its own --cache-dir) sharing one real
// redis-server through --remote-cache. A conversation's head written on replica A reaches Redis
// behind A's disk writes; a session with the same head sent to replica B resumes on B from the
// remote tier, with the answer a server without any cache gives. Another tenant's salt shares
// nothing; Redis stopped is the cold path on every request, never an error. Behind a real HAProxy
// with the project's configuration, a session stays on its replica and moves, with its state,
// when that replica stops.
#include <memory>
#include <string>
#include <vector>

#include "runtime/server/holdings.hpp"
#include "tests/support/chat_turns.hpp"
#include "tests/support/haproxy_server.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/remote_stats.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

constexpr long grid = 32;  // --prefix-chunk: the disk tier's chunk and anchor lines

json agent_messages(const std::string& user) {
  return json::array({{{"role", "system"}, {"content", filler(system_prompt, 1700)}},
                      {{"role", "user"}, {"content", user}}});
}

std::vector<std::string> replica_flags(const temp_dir& dir, const std::string& name,
                                       const redis_server& redis, const std::string& salt) {
  return {"--cache-dir",         dir.str() + "/" + name,
          "--prefix-chunk",      std::to_string(grid),
          "--disk-min-tokens",   "256",
          "--remote-cache",      "redis://127.0.0.1:" + std::to_string(redis.port()),
          "--cache-salt",        salt,
          "--remote-timeout-ms", "500"};
}

}  // namespace

TEST_CASE("a head written on replica A resumes on replica B from Redis with the cold answer",
          "[http][remote]") {
  redis_server redis;
  REQUIRE_REDIS(redis);
  temp_dir dir("anchorage-http-remote");

  http_server a(replica_flags(dir, "a", redis, "team-1"));
  const turn_reply first = post_turn(a, chat_body(agent_messages("List the files in src."), 11, 8));
  CHECK(first.x_cache["source"] == "cold");
  const json da = disk_stats_of(a);
  REQUIRE(da["entries"] == 4);  // a session's first long request: four anchors below its user message
  const long head = da["longest_prefix"];
  const json ra = da["remote"];
  CHECK(ra["enabled"] == true);
  CHECK(ra["target"] == "127.0.0.1:" + std::to_string(redis.port()) + "/0");
  CHECK(ra["namespace"] == remote_namespace("team-1"));
  CHECK(ra["pushed_files"].get<long>() > 4);  // the chunks and the four anchors
  CHECK(ra["push_failures"] == 0);
  CHECK(ra["pushes_out"] == 0);

  // Replica B has never seen the conversation: its own folder is empty.
  http_server b(replica_flags(dir, "b", redis, "team-1"));
  CHECK(disk_stats_of(b)["entries"] == 0);
  const json body = chat_body(agent_messages("Read main.cpp and explain it."), 12, 8);
  const turn_reply moved = post_turn(b, body);
  CHECK(moved.x_cache["source"] == "disk");
  CHECK(moved.x_cache["resumed_at"] == head);
  CHECK(moved.usage["prompt_tokens_details"]["cached_tokens"] == head);
  const json db = disk_stats_of(b);
  CHECK(db["hits"] == 1);
  CHECK(db["remote"]["fetches"] == 1);
  CHECK(db["remote"]["hits"] == 1);
  CHECK(db["remote"]["fetched_files"] == head / grid + 1);  // the head's chunks and its anchor
  CHECK(db["remote"]["failures"] == 0);

  // The answer a server without any cache gives.
  http_server ref({"--no-cache"});
  const turn_reply r = post_turn(ref, body);
  CHECK(moved.message == r.message);

  SECTION("another tenant's salt shares nothing") {
    http_server c(replica_flags(dir, "c", redis, "team-2"));
    const turn_reply other = post_turn(c, body);
    CHECK(other.x_cache["source"] == "cold");
    CHECK(other.message == r.message);
    const json dc = disk_stats_of(c);
    CHECK(dc["remote"]["fetches"].get<long>() >= 1);
    CHECK(dc["remote"]["hits"] == 0);
    CHECK(dc["remote"]["misses"].get<long>() >= 1);
  }
  SECTION("Redis stopped: every request is answered from the cold path, counted, never an error") {
    redis.stop();
    http_server d(replica_flags(dir, "d", redis, "team-1"));
    const turn_reply t1 = post_turn(d, body);
    CHECK(t1.x_cache["source"] == "cold");
    CHECK(t1.message == r.message);
    const turn_reply t2 = post_turn(d, chat_body(agent_messages("Now the tests."), 13, 8));
    CHECK_FALSE(t2.message.empty());
    const json dd = disk_stats_of(d);
    CHECK(dd["remote"]["failures"].get<long>() >= 1);
    CHECK(dd["remote"]["hits"] == 0);
    CHECK(dd["remote"]["push_failures"].get<long>() > 0);
    CHECK(d.get("/health").status == 200);
  }
}

TEST_CASE("a replica started with --remote-cache pushes what its folder already held", "[http][remote]") {
  redis_server redis;
  REQUIRE_REDIS(redis);
  temp_dir dir("anchorage-http-remote-start");
  const json body = chat_body(agent_messages("Read main.cpp and explain it."), 12, 8);
  long head = 0;
  {
    // No shared tier yet: the head is on A's NVMe only.
    http_server a({"--cache-dir", dir.str() + "/a", "--prefix-chunk", std::to_string(grid),
                   "--disk-min-tokens", "256"});
    post_turn(a, chat_body(agent_messages("List the files in src."), 11, 8));
    REQUIRE(a.quiesce());
    const json d = a.get("/v1/cache/stats").body_json()["tiers"]["disk"];
    REQUIRE(d["entries"] == 4);
    CHECK(d["remote"]["enabled"] == false);
    head = d["longest_prefix"];
  }
  http_server a(replica_flags(dir, "a", redis, "team-1"));
  const json da = disk_stats_of(a);
  CHECK(da["remote"]["pushed_files"] == head / grid + 4);  // the chunks the anchors stand on, the anchors
  CHECK(da["remote"]["push_failures"] == 0);

  http_server b(replica_flags(dir, "b", redis, "team-1"));
  const turn_reply moved = post_turn(b, body);
  CHECK(moved.x_cache["source"] == "disk");
  CHECK(moved.x_cache["resumed_at"] == head);
}

namespace {

// A chat turn sent to HAProxy's front, as a client behind the balancer sends it (with opencode's
// session header, or none when `session` is empty).
turn_reply post_via(const haproxy_server& proxy, const std::string& body, const std::string& session) {
  httplib::Client c("127.0.0.1", proxy.port());
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(120, 0);
  c.set_keep_alive(false);
  httplib::Headers headers;
  if (!session.empty()) headers.emplace("x-session-affinity", session);
  const httplib::Result res = c.Post("/v1/chat/completions", headers, body, "application/json");
  http_reply r;
  r.error = res.error();
  if (res) {
    r.status = res->status;
    r.body = res->body;
  }
  INFO("through HAProxy, session " << session << ": " << httplib::to_string(r.error));
  return read_turn(r);
}
turn_reply post_via(const haproxy_server& proxy, const json& body, const std::string& session) {
  return post_via(proxy, body.dump(), session);
}

// The requests a replica served (its ledger's entries).
std::size_t served(const http_server& s) { return s.get("/v1/cache/stats").body_json()["ledger"].size(); }

}  // namespace

TEST_CASE("behind HAProxy a session stays on its replica, and moves with its state when that replica stops",
          "[http][remote][haproxy]") {
  redis_server redis;
  REQUIRE_REDIS(redis);
  temp_dir dir("anchorage-http-haproxy");
  std::unique_ptr<http_server> replicas[2] = {
      std::make_unique<http_server>(replica_flags(dir, "a", redis, "team-1")),
      std::make_unique<http_server>(replica_flags(dir, "b", redis, "team-1"))};
  haproxy_server proxy({{"a", replicas[0]->port()}, {"b", replicas[1]->port()}}, dir.str());
  REQUIRE_HAPROXY(proxy);

  // A session's two turns reach one replica: the second resumes from its memory.
  json messages = agent_messages("List the files in src.");
  const turn_reply t1 = post_via(proxy, chat_body(messages, 21, 8), "ses_main");
  CHECK(t1.x_cache["source"] == "cold");
  echo_turn(messages, t1, "Now read main.cpp.");
  const turn_reply t2 = post_via(proxy, chat_body(messages, 22, 8), "ses_main");
  CHECK(t2.x_cache["source"] != "cold");
  const std::size_t on_a = served(*replicas[0]), on_b = served(*replicas[1]);
  REQUIRE(on_a + on_b == 2);
  const int holder = on_a == 2 ? 0 : 1;
  REQUIRE(served(*replicas[holder]) == 2);

  // What each replica holds, for a balancer: the holder names the session by its digest with its
  // tokens (never its id or a word of its text), and its disk's prefixes; the other holds neither.
  REQUIRE(replicas[holder]->quiesce());
  const http_reply h = replicas[holder]->get("/v1/cache/holdings");
  REQUIRE(h.status == 200);
  const json held = h.body_json();
  INFO(h.body);
  bool listed = false;
  for (const json& s : held["sessions"])
    if (s["session"] == session_digest("ses_main") && s["where"] == "slot") {
      listed = true;
      CHECK(s["tokens"].get<long>() > 1700);
    }
  CHECK(listed);
  CHECK(held["prefixes"]["total"].get<long>() >= 4);
  CHECK(held["shared"]["enabled"] == true);
  CHECK(held["shared"]["namespace"] == remote_namespace("team-1"));
  CHECK(h.body.find("ses_main") == std::string::npos);
  CHECK(h.body.find("List the files") == std::string::npos);
  const json other = replicas[1 - holder]->get("/v1/cache/holdings").body_json();
  CHECK(other["sessions"].empty());
  CHECK(other["prefixes"]["total"] == 0);

  // Other sessions spread over both replicas (a consistent hash of their ids, fixed here).
  for (int i = 0; i < 8; ++i)
    post_via(
        proxy,
        chat_body(json::array({{{"role", "user"}, {"content", "hello " + std::to_string(i)}}}), 30 + i, 2),
        "ses_other_" + std::to_string(i));
  CHECK(served(*replicas[0]) > (holder == 0 ? 2u : 0u));
  CHECK(served(*replicas[1]) > (holder == 1 ? 2u : 0u));

  // Requests without a session header (Qwen Code sends none) go by their body's start, their
  // system prompt: two with the same head reach the same replica.
  const std::size_t before[2] = {served(*replicas[0]), served(*replicas[1])};
  // The bodies as clients write them, the messages first.
  auto build_question = [](const std::string& q) {
    const json m =
        json::array({{{"role", "system"}, {"content", "You answer questions about the build, briefly."}},
                     {{"role", "user"}, {"content", q}}});
    return "{\"messages\":" + m.dump() + ",\"max_tokens\":2,\"temperature\":0}";
  };
  post_via(proxy, build_question("What does the build do?"), "");
  post_via(proxy, build_question("Where are the tests?"), "");
  const std::size_t grew[2] = {served(*replicas[0]) - before[0], served(*replicas[1]) - before[1]};
  CHECK(((grew[0] == 2 && grew[1] == 0) || (grew[0] == 0 && grew[1] == 2)));

  // The holder stops (a planned stop: its /health says 503, then it closes): the session's next
  // turn goes to the other replica, which resumes it from Redis with a cold server's answer.
  REQUIRE(replicas[holder]->quiesce());
  replicas[holder].reset();
  echo_turn(messages, t2, "And the tests?");
  const json body = chat_body(messages, 23, 8);
  const turn_reply t3 = post_via(proxy, body, "ses_main");
  CHECK(t3.x_cache["source"] == "disk");
  CHECK(t3.x_cache["resumed_at"].get<long>() > 0);
  CHECK(t3.usage["prompt_tokens_details"]["cached_tokens"] == t3.x_cache["resumed_at"]);
  const json remote = disk_stats_of(*replicas[1 - holder])["remote"];
  CHECK(remote["hits"] == 1);
  http_server ref({"--no-cache"});
  CHECK(t3.message == post_turn(ref, body).message);
}

TEST_CASE("a conversation replica A spilled at its drain resumes on replica B at its end anchor from Redis",
          "[http][remote][spill]") {
  redis_server redis;
  REQUIRE_REDIS(redis);
  temp_dir dir("anchorage-http-remote-spill");
  auto flags = [&](const std::string& name) {
    // No disk anchors: only the spill can bring the conversation to B.
    return std::vector<std::string>{
        "--cache-dir",         dir.str() + "/" + name,
        "--disk-min-tokens",   "1000000",
        "--remote-cache",      "redis://127.0.0.1:" + std::to_string(redis.port()),
        "--cache-salt",        "team-1",
        "--remote-timeout-ms", "2000"};
  };
  json messages = agent_messages("List the files in src.");
  long end_rows = 0;
  {
    http_server a(flags("a"));
    const turn_reply t1 = post_turn(a, greedy_turn(messages, 12));
    echo_turn(messages, t1, "Now read main.cpp.");
    const turn_reply t2 = post_turn(a, greedy_turn(messages, 12));
    CHECK(t2.x_cache["source"] == "end");
    echo_turn(messages, t2, "And the tests?");
    end_rows = a.get("/v1/cache/stats").body_json()["tiers"]["resident"]["end_anchor"].get<long>();
    REQUIRE(end_rows > 0);
    // The drain spills the conversation and waits for its push.
    CHECK(a.srv().drain(std::chrono::seconds(30)));
    const json r = a.get("/v1/cache/stats").body_json()["tiers"]["disk"]["remote"];
    INFO(r.dump());
    CHECK(r["spill_pushes"] == 1);
    CHECK(r["pushes_out"] == 0);
    CHECK(r["push_failures"] == 0);
  }
  // Replica B never saw it; its folder is empty.
  http_server b(flags("b"));
  const turn_reply t3 = post_turn(b, greedy_turn(messages, 12));
  CHECK(t3.x_cache["source"] == "spill");
  CHECK(t3.x_cache["resumed_at"] == end_rows);
  const json tiers = b.get("/v1/cache/stats").body_json()["tiers"];
  CHECK(tiers["disk"]["remote"]["spill_fetches"].get<long>() >= 1);
  CHECK(tiers["disk"]["remote"]["spill_hits"] == 1);
  CHECK(tiers["spill"]["hits"] == 1);

  // A server that never stopped, and never had a cache but its resident prefix.
  http_server ref({"--disk-min-tokens", "1000000"});
  json again = agent_messages("List the files in src.");
  const turn_reply r1 = post_turn(ref, greedy_turn(again, 12));
  echo_turn(again, r1, "Now read main.cpp.");
  const turn_reply r2 = post_turn(ref, greedy_turn(again, 12));
  echo_turn(again, r2, "And the tests?");
  REQUIRE(again == messages);
  const turn_reply r3 = post_turn(ref, greedy_turn(again, 12));
  CHECK(r3.x_cache["source"] == "end");
  CHECK(t3.message == r3.message);
  CHECK(t3.x_cache["prefilled_tokens"] == r3.x_cache["prefilled_tokens"]);

  SECTION("another tenant's salt does not find it") {
    auto other = flags("c");
    other[7] = "team-2";
    http_server c(other);
    const turn_reply t = post_turn(c, greedy_turn(messages, 12));
    CHECK(t.x_cache["source"] == "cold");
    CHECK(t.message == r3.message);
  }
}
