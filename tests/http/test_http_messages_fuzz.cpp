// Fuzzed input on POST /v1/messages: a request Claude Code 2.1.328 sent (captured by
// tools/client-check claude-code, strings cut to 24 characters (64 in messages), two of its twelve tools kept
// (Bash and Edit), one tool_use / tool_result exchange added in the shape it sends them: its prompt is about
// 2,000 tokens, so the 563 requests run in bounded time under the sanitizers) mutated leaf by leaf, item by
// item and cut short. Each gets a 200 or a 4xx in Anthropic's error shape, never a 5xx.
#include <fstream>
#include <sstream>

#include "tests/support/http_helpers.hpp"
#include "tests/support/mutated_bodies.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

json captured_claude_code_request() {
  const std::string path =
      std::string(ANCHORAGE_SOURCE_DIR) + "/tests/http/corpus/claude-code-2.1.328-messages.json";
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

}  // namespace

TEST_CASE(
    "http: messages: 500 mutated Claude Code requests get a 200 or a 4xx in Anthropic's shape, never a 5xx",
    "[http][anthropic]") {
  http_server s;
  const json base = captured_claude_code_request();
  REQUIRE(base["messages"].size() >= 8);
  const httplib::Headers headers = {{"x-api-key", "sk-anything"},
                                    {"anthropic-version", "2023-06-01"},
                                    {"x-claude-code-session-id", "0f1c48a8-7fb0-4d4e-8c69-c5f8763b7daf"}};
  // The unmutated request is served: the corpus is built from a request the route takes.
  const http_reply whole = s.post("/v1/messages?beta=true", base.dump(), headers);
  INFO(whole.body.substr(0, 600));
  REQUIRE(whole.status == 200);
  CHECK(whole.body_json()["type"] == "message");

  const std::vector<std::string> all = mutated_bodies(base, "/messages");
  // Every third body: each leaf still meets several of its mutations, in bounded time.
  std::vector<std::string> bodies;
  for (std::size_t i = 0; i < all.size(); i += 3) bodies.push_back(all[i]);
  INFO(bodies.size() << " bodies of " << all.size());
  REQUIRE(bodies.size() >= 500);
  int ok = 0, refused = 0;
  for (const std::string& body : bodies) {
    const http_reply r = s.post("/v1/messages?beta=true", body, headers);
    INFO(body.substr(0, 600));
    INFO("reply " << r.status << ": " << r.body.substr(0, 400));
    REQUIRE(r.status > 0);
    CHECK(r.status < 500);
    const json j = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    REQUIRE(j.is_object());
    if (r.status == 200) {
      ++ok;
      CHECK(j["type"] == "message");
      continue;
    }
    ++refused;
    CHECK(r.status >= 400);
    CHECK(j["type"] == "error");
    CHECK(j["error"]["type"].is_string());
    CHECK(j["error"]["message"].is_string());
  }
  CHECK(ok > 0);
  CHECK(refused > 0);
  // The server still serves after all of them.
  CHECK(s.post("/v1/messages", base.dump(), headers).status == 200);
}
