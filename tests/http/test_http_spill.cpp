// End-to-end: the session spill (issue 14). A restart through the drain (what SIGTERM runs)
// resumes the next turn from the spill at its end anchor with the greedy tokens of a server that
// never stopped, and the drain waits for the spill; another session that evicts a conversation
// the park cannot hold spills it, and its next turn comes back from the spill with the answer of
// a server that ran only it; clear and the counters cover the spill.
#include <filesystem>
#include <thread>

#include "tests/support/chat_turns.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::size_t files_with(const std::string& dir, const std::string& ext) {
  std::size_t n = 0;
  if (!std::filesystem::exists(dir)) return 0;
  for (auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.is_regular_file() && f.path().extension() == ext) ++n;
  return n;
}

json conversation(const std::string& who) {
  return json::array({{{"role", "system"}, {"content", filler(who + " " + system_prompt, 900)}},
                      {{"role", "user"}, {"content", "List the files in src."}}});
}

// The tiers' stats once every write is committed (the spill's are behind requests).
json tiers_of(const http_server& s) {
  REQUIRE(s.quiesce());
  const json j = s.get("/v1/cache/stats").body_json();
  REQUIRE(j.contains("tiers"));
  return j["tiers"];
}

}  // namespace

TEST_CASE("http: a restart through the drain resumes the next turn from the spill with the same tokens",
          "[http][spill]") {
  temp_dir dir("anchorage-http-spill");
  const std::vector<std::string> flags = {"--cache-dir", dir.str(), "--disk-min-tokens", "1000000"};
  json messages = conversation("A");
  long end_rows = 0;
  {
    http_server a(flags);
    const turn_reply t1 = post_turn(a, greedy_turn(messages, 12));
    echo_turn(messages, t1, "Now read main.cpp.");
    const turn_reply t2 = post_turn(a, greedy_turn(messages, 12));
    CHECK(t2.x_cache["source"] == "end");
    echo_turn(messages, t2, "And the tests?");
    end_rows = a.get("/v1/cache/stats").body_json()["tiers"]["resident"]["end_anchor"].get<long>();
    CHECK(a.srv().drain(std::chrono::seconds(30)));
    // Right when the drain returns, before the process would exit: the spill is on disk.
    CHECK(files_with(dir.str(), ".man") == 1);
    CHECK(files_with(dir.str(), ".blk") >= 1);
    CHECK(files_with(dir.str(), ".tmp") == 0);
  }
  http_server b(flags);
  const json tiers = tiers_of(b);
  REQUIRE(tiers.contains("spill"));
  CHECK(tiers["spill"]["entries"] == 1);
  CHECK(tiers["resident"]["end_anchor"] == end_rows);
  const turn_reply t3 = post_turn(b, greedy_turn(messages, 12));
  CHECK(t3.x_cache["source"] == "spill");
  CHECK(t3.x_cache["resumed_at"] == end_rows);
  // A server that never stopped.
  temp_dir other("anchorage-http-spill-ref");
  http_server ref({"--cache-dir", other.str(), "--disk-min-tokens", "1000000"});
  json again = conversation("A");
  const turn_reply r1 = post_turn(ref, greedy_turn(again, 12));
  echo_turn(again, r1, "Now read main.cpp.");
  const turn_reply r2 = post_turn(ref, greedy_turn(again, 12));
  echo_turn(again, r2, "And the tests?");
  REQUIRE(again == messages);
  const turn_reply r3 = post_turn(ref, greedy_turn(again, 12));
  CHECK(r3.x_cache["source"] == "end");
  CHECK(t3.message == r3.message);
  CHECK(t3.x_cache["prefilled_tokens"] == r3.x_cache["prefilled_tokens"]);
  const std::string metrics = b.get("/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("anchorage_cache_hits_total{tier=\"spill\"} 1"));
  CHECK_THAT(metrics, Catch::Contains("anchorage_cache_bytes_read_total{tier=\"spill\"}"));
}

TEST_CASE(
    "http: a conversation another session evicts comes back from the spill with the answer of a "
    "server that ran only it",
    "[http][spill]") {
  temp_dir dir("anchorage-http-spill-evict");
  const std::vector<std::string> flags = {"--cache-dir",          dir.str(), "--disk-min-tokens",  "1000000",
                                          "--spill-min-tokens",   "256",     "--resident-park-gb", "0",
                                          "--resident-guest-max", "0",       "--cache-budget-gb",  "0"};
  http_server s(flags);
  json a = conversation("A");
  const turn_reply a1 = post_turn(s, greedy_turn(a, 10));
  echo_turn(a, a1, "Now read main.cpp.");
  // Session B replaces A's rows; the park holds nothing, so A is spilled first.
  const turn_reply b1 = post_turn(s, greedy_turn(conversation("B"), 10));
  CHECK(b1.x_cache["source"] == "cold");
  const json spill = tiers_of(s)["spill"];
  REQUIRE(spill["entries"] == 1);
  CHECK(spill["staged_bytes"] == 0);
  const turn_reply a2 = post_turn(s, greedy_turn(a, 10));
  CHECK(a2.x_cache["source"] == "spill");
  // A server that ran only A.
  http_server ref({"--disk-min-tokens", "1000000"});
  json alone = conversation("A");
  const turn_reply r1 = post_turn(ref, greedy_turn(alone, 10));
  echo_turn(alone, r1, "Now read main.cpp.");
  REQUIRE(alone == a);
  const turn_reply r2 = post_turn(ref, greedy_turn(alone, 10));
  CHECK(r2.x_cache["source"] == "end");
  CHECK(a2.message == r2.message);
  CHECK(a2.x_cache["prefilled_tokens"] == r2.x_cache["prefilled_tokens"]);
}

TEST_CASE("http: clear with tier=spill deletes the spill's files", "[http][spill]") {
  temp_dir dir("anchorage-http-spill-clear");
  const std::vector<std::string> flags = {"--cache-dir", dir.str(),       "--disk-min-tokens",
                                          "1000000",     "--admin-token", "secret"};
  const httplib::Headers admin = {{"Authorization", "Bearer secret"}};
  {
    http_server a(flags);
    post_turn(a, greedy_turn(conversation("A"), 6));
    CHECK(a.srv().drain(std::chrono::seconds(30)));
  }
  REQUIRE(files_with(dir.str(), ".man") == 1);
  const std::size_t blocks = files_with(dir.str(), ".blk");
  {
    // A start that reads the conversation back and stops again: nothing changed, nothing written.
    http_server again(flags);
    CHECK(again.srv().drain(std::chrono::seconds(30)));
    const json sp = tiers_of(again)["spill"];
    CHECK(sp["blocks_written"] == 0);
    CHECK(sp["bytes_written"] == 0);
    CHECK(sp["writes_unchanged"] == 1);
    CHECK(sp["reads"] == 1);
  }
  CHECK(files_with(dir.str(), ".blk") == blocks);
  http_server b(flags);
  const http_reply r = b.post("/v1/cache/clear?tier=spill", "", admin);
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["cleared"] == json::array({"spill"}));
  CHECK(files_with(dir.str(), ".man") == 0);
  CHECK(files_with(dir.str(), ".blk") == 0);
  CHECK(tiers_of(b)["spill"]["entries"] == 0);
  // With the spill off nothing is named spill.
  http_server off({"--cache-dir", dir.str(), "--session-spill", "off", "--admin-token", "secret"});
  CHECK(tiers_of(off)["spill"]["enabled"] == false);
  CHECK(off.post("/v1/cache/clear?tier=spill", "", admin).status == 400);
}

namespace {

// Sessions that evict each other on `parallel` slots, each asked for again at once after its
// eviction (its spill possibly still being written): every such turn resumes from the spill with
// the answer of a server that ran only that conversation, `rounds` times in a row.
void evicted_and_asked_at_once(int parallel, int rounds) {
  temp_dir dir("anchorage-http-spill-race");
  const std::vector<std::string> flags = {"--cache-dir",          dir.str(),
                                          "--disk-min-tokens",    "1000000",
                                          "--spill-min-tokens",   "256",
                                          "--resident-park-gb",   "0",
                                          "--resident-guest-max", "0",
                                          "--cache-budget-gb",    "0",
                                          "--parallel",           std::to_string(parallel)};
  http_server s(flags);
  http_server ref({"--disk-min-tokens", "1000000"});
  for (int i = 0; i < rounds; ++i) {
    INFO("round " << i << " of " << rounds << " on " << parallel << " slot(s)");
    const std::string a_name = "A" + std::to_string(i);
    json a = conversation(a_name);
    const turn_reply a1 = post_turn(s, greedy_turn(a, 6));
    echo_turn(a, a1, "Now read main.cpp.");
    // Every other slot taken by other sessions, the last of which evicts A.
    for (int k = 0; k < parallel; ++k)
      post_turn(s, greedy_turn(conversation("B" + std::to_string(i) + "_" + std::to_string(k)), 6));
    // A at once.
    const turn_reply a2 = post_turn(s, greedy_turn(a, 6));
    CHECK(a2.x_cache["source"] == "spill");
    // A server that ran only A.
    json alone = conversation(a_name);
    const turn_reply r1 = post_turn(ref, greedy_turn(alone, 6));
    echo_turn(alone, r1, "Now read main.cpp.");
    REQUIRE(alone == a);
    const turn_reply r2 = post_turn(ref, greedy_turn(alone, 6));
    CHECK(a2.message == r2.message);
    CHECK(a2.x_cache["resumed_at"] == r2.x_cache["resumed_at"]);
    CHECK(a2.x_cache["prefilled_tokens"] == r2.x_cache["prefilled_tokens"]);
  }
  const json spill = s.get("/v1/cache/stats").body_json()["tiers"]["spill"];
  CHECK(spill["read_failures"] == 0);
  CHECK(spill["write_failures"] == 0);
  // How often the race was met (a request held for its spill's commit): not fixed by the test.
  WARN("spill race on " << parallel << " slot(s): " << spill.value("in_flight_waits", 0L) << " of " << rounds
                        << " turns waited for their spill's commit");
}

}  // namespace

TEST_CASE(
    "http: a conversation evicted and asked for again at once resumes from the spill, one slot, 20 times",
    "[http][spill]") {
  evicted_and_asked_at_once(1, 20);
}

TEST_CASE(
    "http: a conversation evicted and asked for again at once resumes from the spill, two slots, 20 times",
    "[http][spill]") {
  evicted_and_asked_at_once(2, 20);
}
