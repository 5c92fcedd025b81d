// End-to-end: the disk tier across a restart (a new server on the same --cache-dir), its clear
// route and counters, and a generation cut short resumed from its durable checkpoint with the
// same tokens an uninterrupted server gives.
#include <filesystem>
#include <thread>
#include <utility>

#include "tests/support/chat_turns.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// The disk tier's stats once every write is committed (writes are behind requests), checked
// against what the test expects of them.
json wait_disk(const http_server& s, const std::function<bool(const json&)>& expected) {
  REQUIRE(s.quiesce());
  const json d = s.get("/v1/cache/stats").body_json()["tiers"]["disk"];
  REQUIRE(d.contains("entries"));
  INFO(d.dump());
  CHECK(expected(d));
  return d;
}

std::size_t files_under(const std::string& dir, const std::string& ext) {
  std::size_t n = 0;
  for (auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.is_regular_file() && (ext.empty() || f.path().extension() == ext)) ++n;
  return n;
}

json agent_messages(const std::string& user) {
  return json::array({{{"role", "system"}, {"content", filler(system_prompt, 1700)}},
                      {{"role", "user"}, {"content", user}}});
}

}  // namespace

TEST_CASE("after a restart a new session's head comes back from disk with the cold answer", "[http][disk]") {
  temp_dir dir("anchorage-http-disk");
  const std::vector<std::string> flags = {"--cache-dir", dir.str(), "--disk-min-tokens", "256"};
  long user_start_line = 0;
  {
    http_server a(flags);
    const turn_reply t = post_turn(a, chat_body(agent_messages("List the files in src."), 11, 8));
    CHECK(t.x_cache["source"] == "cold");
    // A session's first long request: anchors at the last 4 lines below its user message.
    const json d =
        wait_disk(a, [](const json& stats) { return stats["entries"] >= 4 && stats["staged_bytes"] == 0; });
    REQUIRE(d["entries"] == 4);
    user_start_line = d["longest_prefix"];
    CHECK(d["files_written"].get<long>() > 4);
  }
  REQUIRE(files_under(dir.str(), ".anc") == 4);
  // A new process on the same folder; another session with the same head.
  http_server b(flags);
  const json scanned = wait_disk(b, [](const json&) { return true; });
  CHECK(scanned["entries"] == 4);
  const json body = chat_body(agent_messages("Read main.cpp and explain it."), 12, 8);
  const turn_reply t = post_turn(b, body);
  CHECK(t.x_cache["source"] == "disk");
  CHECK(t.x_cache["resumed_at"] == user_start_line);
  CHECK(t.usage["prompt_tokens_details"]["cached_tokens"] == user_start_line);
  // The answer is the one a server without any cache gives.
  http_server ref({"--no-cache"});
  const turn_reply r = post_turn(ref, body);
  CHECK(t.message == r.message);
  const json d = b.get("/v1/cache/stats").body_json()["tiers"]["disk"];
  CHECK(d["hits"] == 1);
  CHECK(d["tokens_saved"] == user_start_line);
  const std::string metrics = b.get("/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("anchorage_cache_hits_total{tier=\"disk\"} 1"));
  CHECK_THAT(metrics, Catch::Contains("anchorage_cache_bytes_read_total{tier=\"disk\"}"));
}

TEST_CASE("clear with tier=disk deletes the tier's files, tier=all too", "[http][disk]") {
  temp_dir dir("anchorage-http-disk");
  http_server a({"--cache-dir", dir.str(), "--disk-min-tokens", "256", "--admin-token", "secret"});
  const httplib::Headers admin = {{"Authorization", "Bearer secret"}};
  post_turn(a, chat_body(agent_messages("List the files in src."), 11, 4));
  wait_disk(a, [](const json& d) { return d["entries"] >= 4 && d["staged_bytes"] == 0; });
  REQUIRE(files_under(dir.str(), ".chk") > 0);
  const http_reply r = a.post("/v1/cache/clear?tier=disk", "", admin);
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["cleared"] == json::array({"disk"}));
  CHECK(files_under(dir.str(), "") == 0);
  CHECK(a.get("/v1/cache/stats").body_json()["tiers"]["disk"]["entries"] == 0);
  // Another agent's head: prefilled cold (the resident head above would resume it, and a resumed
  // prefix is not written again), so the disk holds files again for tier=all to delete.
  json other = agent_messages("Another first question.");
  other[0]["content"] = filler(std::string("Another agent. ") + system_prompt, 1700);
  post_turn(a, chat_body(other, 13, 4));
  wait_disk(a, [](const json& d) { return d["entries"] >= 4 && d["staged_bytes"] == 0; });
  REQUIRE(files_under(dir.str(), ".chk") > 0);
  const http_reply all = a.post("/v1/cache/clear?tier=all", "", admin);
  REQUIRE(all.status == 200);
  CHECK(all.body_json()["cleared"] == json::array({"resident", "store", "disk", "spill"}));
  CHECK(files_under(dir.str(), "") == 0);
}

TEST_CASE("a generation cut short resumes after a restart from its checkpoint with identical tokens",
          "[http][disk][checkpoint]") {
  temp_dir dir("anchorage-http-disk");
  const std::vector<std::string> flags = {"--cache-dir", dir.str(),        "--generation-checkpoint-tokens",
                                          "16",          "--decode-block", "1"};
  json body = chat_body(json::array({{{"role", "user"}, {"content", "Write a long story."}}}), 77, 1200);
  body["chat_template_kwargs"] = {{"enable_thinking", false}};
  {
    http_server a(flags);
    json streamed = body;
    streamed["stream"] = true;
    // The client goes away after 40 chunks, well before the 1200 tokens.
    const sse_stream st =
        a.stream("/v1/chat/completions", streamed, [](const sse_stream& s) { return s.events.size() < 40; });
    REQUIRE(st.aborted);
    // The board ends the request at its next step; until then it may stage more checkpoints.
    REQUIRE(a.quiesce());
    REQUIRE(a.ledger().size() == 1);
    CHECK(a.ledger()[0]["finish_reason"] == "cancelled");
    const json d = wait_disk(
        a, [](const json& stats) { return stats["checkpoints"] >= 1 && stats["staged_bytes"] == 0; });
    REQUIRE(d["checkpoints"] == 1);  // each newer one superseded the last
  }
  REQUIRE(files_under(dir.str(), ".gen") == 1);
  http_server b(flags);
  const turn_reply t = post_turn(b, body);
  CHECK(t.x_cache["source"] == "checkpoint");
  CHECK(t.x_cache["resumed_at"].get<long>() > 0);
  CHECK(t.x_cache["prefilled_tokens"] == 0);
  http_server ref({"--no-cache"});
  const turn_reply r = post_turn(ref, body);
  CHECK(t.finish_reason == r.finish_reason);
  CHECK(t.message == r.message);
  CHECK(t.usage["completion_tokens"] == r.usage["completion_tokens"]);
  // The generation ended: its checkpoint is gone.
  const json d =
      wait_disk(b, [](const json& stats) { return stats["checkpoints"] == 0 && stats["staged_bytes"] == 0; });
  CHECK(d["checkpoints"] == 0);
}

TEST_CASE("a planned stop (the drain) waits for the disk tier's staged writes", "[http][disk]") {
  temp_dir dir("anchorage-http-disk");
  const std::vector<std::string> flags = {"--cache-dir", dir.str(), "--disk-min-tokens", "256"};
  {
    http_server a(flags);
    post_turn(a, chat_body(agent_messages("List the files in src."), 11, 4));
    CHECK(a.srv().drain(std::chrono::seconds(30)));  // no waiting on the stats here
    // Right when the drain returns, before the server stops: every file is in place.
    CHECK(files_under(dir.str(), ".anc") == 4);
    CHECK(files_under(dir.str(), ".chk") >= 4);
  }
  CHECK(files_under(dir.str(), ".anc") == 4);
  CHECK(files_under(dir.str(), ".tmp") == 0);
  http_server b(flags);
  CHECK(wait_disk(b, [](const json&) { return true; })["entries"] == 4);
}

TEST_CASE("two slots write two sessions' heads at once, after a restart both come back from disk",
          "[http][disk][slots]") {
  temp_dir dir("anchorage-http-disk-slots");
  const std::vector<std::string> flags = {"--cache-dir", dir.str(),    "--disk-min-tokens",
                                          "256",         "--parallel", "2"};
  auto messages = [](const std::string& system, const std::string& user) {
    return json::array(
        {{{"role", "system"}, {"content", filler(system, 1700)}}, {{"role", "user"}, {"content", user}}});
  };
  const std::string sys_a = system_prompt, sys_b = std::string("You review pull requests. ") + system_prompt;
  {
    http_server a(flags);
    http_reply rb;
    std::thread other([&] { rb = send_turn(a, chat_body(messages(sys_b, "Review the diff."), 21, 8)); });
    const turn_reply ta = post_turn(a, chat_body(messages(sys_a, "List the files in src."), 22, 8));
    other.join();
    const turn_reply tb = read_turn(rb);
    CHECK(ta.x_cache["slot"] != tb.x_cache["slot"]);
    const json d =
        wait_disk(a, [](const json& stats) { return stats["entries"] >= 8 && stats["staged_bytes"] == 0; });
    CHECK(d["entries"] == 8);
  }
  http_server b(flags);
  wait_disk(b, [](const json&) { return true; });
  for (const auto& [sys, user] : {std::pair{sys_a, "Read main.cpp."}, std::pair{sys_b, "Check the tests."}}) {
    const json body = chat_body(messages(sys, user), 23, 8);
    const turn_reply t = post_turn(b, body);
    CHECK(t.x_cache["source"] == "disk");
    http_server ref({"--no-cache"});
    CHECK(t.message == post_turn(ref, body).message);
  }
}
