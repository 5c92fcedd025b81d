// End-to-end: a long conversation interrupted by a title request, by another session, and with
// --parallel 2 by a guest on the other slot; each time its next turn resumes from its end anchor.
#include <thread>

#include "tests/support/chat_turns.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A conversation with a long system prompt (about 1,700 tokens), its first answer echoed back
// with a tool result: the messages of its next turn and the prefill that turn should need.
struct conversation {
  json messages;
  std::size_t next_prefill = 0;

  conversation(const std::string& system, const std::string& first_user) {
    messages =
        json::array({{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", first_user}}});
  }
  turn_reply turn(const http_server& s, std::uint64_t seed) { return take(send(s, seed), seed); }
  // The two halves of a turn: sending (no assertion, safe from a second thread) and reading.
  http_reply send(const http_server& s, std::uint64_t seed) const {
    return send_turn(s, chat_body(messages, seed));
  }
  turn_reply take(const http_reply& r, std::uint64_t seed) {
    const turn_reply t = read_turn(r);
    REQUIRE(t.finish_reason == "length");
    messages.push_back({{"role", "assistant"},
                        {"content", t.message["content"]},
                        {"reasoning_content", t.message["reasoning_content"]}});
    const std::string result = "exit code " + std::to_string(seed);
    messages.push_back({{"role", "tool"}, {"tool_call_id", "c"}, {"content", result}});
    next_prefill = 1 + count_tokens(tool_glue(result));  // the pending token, the glue, the result
    return t;
  }
};

std::string long_system() { return filler(system_prompt, 1700); }

turn_reply title_request(const http_server& s) {
  const json messages =
      json::array({{{"role", "system"}, {"content", "Generate a short title for the conversation."}},
                   {{"role", "user"}, {"content", "List the files in src and read main.cpp."}}});
  return post_turn(s, chat_body(messages, 9, 8));
}

}  // namespace

// The same conversation on a server that sees nothing else: what the interrupted one must answer.
std::vector<json> uninterrupted(const std::string& system, const std::string& first_user,
                                const std::vector<std::uint64_t>& seeds) {
  http_server s({"--reasoning-budget", "6"});
  conversation c(system, first_user);
  std::vector<json> out;
  for (auto seed : seeds) out.push_back(c.turn(s, seed).message);
  return out;
}

TEST_CASE("a title request between two turns is a guest: the next turn resumes at its end",
          "[http][cache][guest]") {
  http_server s({"--reasoning-budget", "6"});
  conversation a(long_system(), "List the files in src and read main.cpp.");
  a.turn(s, 1);
  const turn_reply title = title_request(s);
  CHECK(title.x_cache["via"] == "stash");
  const turn_reply next = a.turn(s, 2);
  CHECK(next.x_cache["source"] == "end");
  // The rows the title request overwrote came back: the answer is the uninterrupted one.
  CHECK(next.message == uninterrupted(long_system(), "List the files in src and read main.cpp.", {1, 2})[1]);
  CHECK(next.x_cache["prefilled_tokens"].get<std::size_t>() == 1 + count_tokens(tool_glue("exit code 1")));
  const json stats = s.get("/v1/cache/stats").body_json();
  CHECK(stats["tiers"]["resident"]["guests_stashed"] == 1);
}

TEST_CASE("sessions A, B, A: A comes back from the park and re-reads only its new tokens",
          "[http][cache][park]") {
  http_server s({"--reasoning-budget", "6"});
  // Two sessions of one client: the same system prompt, different first messages.
  conversation a(long_system(), "Fix the failing test in parser.cpp.");
  conversation b(long_system(), "Write a README for the project.");
  a.turn(s, 1);
  std::size_t a_expected = a.next_prefill;
  const turn_reply b1 = b.turn(s, 2);
  CHECK(b1.x_cache["source"] == "resident");  // the shared system prompt, from A's anchors
  const turn_reply a2 = a.turn(s, 3);
  CHECK(a2.x_cache["via"] == "park");
  CHECK(a2.x_cache["source"] == "end");
  CHECK(a2.x_cache["prefilled_tokens"].get<std::size_t>() == a_expected);
  const std::size_t b_expected = b.next_prefill;
  const turn_reply b2 = b.turn(s, 4);
  CHECK(b2.x_cache["via"] == "park");
  CHECK(b2.x_cache["prefilled_tokens"].get<std::size_t>() == b_expected);
  const json stats = s.get("/v1/cache/stats").body_json();
  CHECK(stats["tiers"]["resident"]["park_hits"] == 2);
  // Each session answers as it would alone.
  CHECK(a2.message == uninterrupted(long_system(), "Fix the failing test in parser.cpp.", {1, 3})[1]);
  const auto alone_b = uninterrupted(long_system(), "Write a README for the project.", {2, 4});
  CHECK(b1.message == alone_b[0]);
  CHECK(b2.message == alone_b[1]);
}

TEST_CASE("with --parallel 2 a guest runs on the other slot", "[http][cache][slots]") {
  http_server s({"--reasoning-budget", "6", "--parallel", "2"});
  conversation a(long_system(), "List the files in src and read main.cpp.");
  const turn_reply first = a.turn(s, 1);
  CHECK(first.x_cache["slot"] == 0);
  // The title request takes the empty slot: nothing of the conversation's is stashed or moved.
  const turn_reply title = title_request(s);
  CHECK(title.x_cache["slot"] == 1);
  CHECK_FALSE(title.x_cache.contains("via"));
  const turn_reply next = a.turn(s, 2);
  CHECK(next.x_cache["slot"] == 0);
  CHECK(next.x_cache["source"] == "end");
  CHECK(next.x_cache["prefilled_tokens"].get<std::size_t>() == 1 + count_tokens(tool_glue("exit code 1")));
  CHECK(next.message == uninterrupted(long_system(), "List the files in src and read main.cpp.", {1, 2})[1]);
  const json stats = s.get("/v1/cache/stats").body_json();
  CHECK(stats["tiers"]["resident"]["guests_side"] == 0);
  CHECK(stats["tiers"]["resident"]["guests_stashed"] == 0);
  REQUIRE(stats["slots"].size() == 2);
  CHECK(stats["slots"][0]["resident_tokens"].get<std::size_t>() >
        stats["slots"][1]["resident_tokens"].get<std::size_t>());
  CHECK(stats["slots"][1]["resident_tokens"].get<std::size_t>() > 0);
  CHECK(stats["queue"]["slots"] == 2);
}

TEST_CASE(
    "with --parallel 2 a title sent during the conversation's prefill answers first, the next turn resumes "
    "at its end",
    "[http][cache][slots]") {
  http_server s({"--reasoning-budget", "6", "--parallel", "2"});
  conversation a(filler(system_prompt, 6000), "List the files in src and read main.cpp.");
  http_reply first_reply;
  std::thread t([&] { first_reply = a.send(s, 1); });
  CHECK(s.wait_running(1));
  const turn_reply title = title_request(s);
  t.join();
  const turn_reply first = a.take(first_reply, 1);
  CHECK(title.x_cache["slot"] != first.x_cache["slot"]);
  // The title did not wait for the conversation's prefill: it finished first, well before the
  // conversation's first token.
  const json ledger = s.ledger();
  REQUIRE(ledger.size() == 2);
  CHECK(ledger[0]["prompt_tokens"] == title.usage["prompt_tokens"]);
  CHECK(title.x_cache["ttft_ms"].get<double>() < first.x_cache["ttft_ms"].get<double>());
  const turn_reply next = a.turn(s, 2);
  CHECK(next.x_cache["source"] == "end");
  CHECK(next.x_cache["slot"] == first.x_cache["slot"]);
  CHECK(next.x_cache["prefilled_tokens"].get<std::size_t>() == 1 + count_tokens(tool_glue("exit code 1")));
}
