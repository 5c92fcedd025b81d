// End-to-end: Anthropic's Messages API (POST /v1/messages, ?beta=true, count_tokens) on a whole
// server over loopback. A conversation whose client sends back the content blocks it received
// (thinking blocks with their signatures, or without them) resumes at the end anchor and reports
// what it resumed as cache_read_input_tokens; a stream adds up to the non-streamed answer; a
// tool_use the client re-serialises costs nothing; bad input gets a 4xx in Anthropic's shape.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/anthropic_stream.hpp"
#include "tests/support/chat_turns.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

const httplib::Headers claude_headers = {
    {"x-api-key", "sk-anything"},
    {"anthropic-version", "2023-06-01"},
    {"anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"}};

// {"type":"error","error":{"type","message"}} with the status given.
void check_anthropic_error(const http_reply& r, int status, const std::string& type) {
  INFO("reply " << r.status << ": " << r.body.substr(0, 400));
  CHECK(r.status == status);
  CHECK(r.header("Content-Type").find("application/json") == 0);
  const json j = r.body_json();
  REQUIRE(j.is_object());
  CHECK(j.size() == 2);
  CHECK(j["type"] == "error");
  REQUIRE(j["error"].is_object());
  CHECK(j["error"].size() == 2);
  CHECK(j["error"]["type"] == type);
  REQUIRE(j["error"]["message"].is_string());
  CHECK_FALSE(j["error"]["message"].get<std::string>().empty());
}

// A message body, checked for Anthropic's members and a usage that adds up: what the cache
// restored is cache_read_input_tokens (x_cache.resumed_at), what was prefilled input_tokens.
json read_message(const http_reply& r) {
  INFO("reply " << r.status << ": " << r.body.substr(0, 600));
  REQUIRE(r.status == 200);
  const json m = r.body_json();
  CHECK(m["id"].get<std::string>().rfind("msg_", 0) == 0);
  CHECK(m["type"] == "message");
  CHECK(m["role"] == "assistant");
  CHECK(m["model"].is_string());
  REQUIRE(m["content"].is_array());
  CHECK(m["stop_reason"].is_string());
  CHECK(m.contains("stop_sequence"));
  const json& u = m["usage"];
  const json& x = m["x_cache"];
  CHECK(u["cache_read_input_tokens"] == x["resumed_at"]);
  CHECK(u["input_tokens"] == x["prefilled_tokens"]);
  CHECK(u["cache_creation_input_tokens"] == 0);
  CHECK(u["output_tokens"].get<long>() > 0);
  return m;
}

// The text of the blocks of `type` in a message's content.
std::string blocks_text(const json& content, const std::string& type) {
  std::string out;
  for (const json& b : content)
    if (b["type"] == type) out += b[type == "thinking" ? "thinking" : "text"].get<std::string>();
  return out;
}

json billing_system(int request) {
  return json::array(
      {{{"type", "text"},
        {"text", "x-anthropic-billing-header: cc_version=2.1.328.0d9; cc_entrypoint=cli; cch=" +
                     std::to_string(10000 + request * 7919) + ";"}},
       {{"type", "text"}, {"text", "You are Claude Code, Anthropic's official CLI for Claude."}},
       {{"type", "text"}, {"text", system_prompt}, {"cache_control", {{"type", "ephemeral"}}}}});
}

// The greedy request the stream tests send, thinking on with a short budget.
json greedy_request() {
  return {{"model", "anchorage"},
          {"max_tokens", 32},
          {"temperature", 0},
          {"system", "You are terse."},
          {"messages", json::array({{{"role", "user"}, {"content", "Count to five."}}})},
          {"thinking", {{"type", "enabled"}, {"budget_tokens", 8}}}};
}

// Why the official SDK cannot be run here, or "" when it can.
std::string sdk_missing(const std::string& npm_dir) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) return "node not found on PATH";
  if (!std::filesystem::exists(npm_dir + "/node_modules/@anthropic-ai/sdk/package.json"))
    return "@anthropic-ai/sdk is not installed at " + npm_dir +
           "/node_modules (tools/bootstrap test installs it)";
  return "";
}

}  // namespace

TEST_CASE("http: messages: every follow-up resumes at the end anchor with or without its thinking",
          "[http][anthropic]") {
  http_server s;
  json messages = json::array({{{"role", "user"}, {"content", "List the files in src."}}});
  const std::string session = "54c1eb09-2c4f-4b8e-9d6a-0a1b2c3d4e5f";
  long first_prompt = 0;
  std::string last_user = "List the files in src.";
  for (int turn = 0; turn < 4; ++turn) {
    INFO("turn " << turn);
    // Claude Code's shape: the billing block's cch changes every request; thinking on with a
    // budget short enough that every answer holds thinking and text.
    const json body = {
        {"model", "anchorage"},
        {"max_tokens", 24},
        {"system", billing_system(turn)},
        {"messages", messages},
        {"thinking", {{"type", "enabled"}, {"budget_tokens", 6}}},
        {"metadata", {{"user_id", json({{"device_id", "d"}, {"session_id", session}}).dump()}}}};
    const json m = read_message(s.post_json("/v1/messages?beta=true", body, claude_headers));
    const json& x = m["x_cache"];
    const long read = m["usage"]["cache_read_input_tokens"];
    if (turn == 0) {
      CHECK(x["source"] == "cold");
      CHECK(read == 0);
      first_prompt = m["usage"]["input_tokens"];
    } else {
      CHECK(x["source"] == "end");
      CHECK(read > first_prompt);  // past the system prompt and the first turn
      CHECK(read == x["resumed_at"].get<long>());
      // only the new turn is read: the pending token, the glue and the new message
      CHECK(m["usage"]["input_tokens"].get<long>() <=
            static_cast<long>(count_tokens(user_glue(last_user))) + 4);
    }
    CHECK((m["stop_reason"] == "max_tokens" || m["stop_reason"] == "end_turn"));
    REQUIRE_FALSE(blocks_text(m["content"], "thinking").empty());
    // The session is the one metadata.user_id names.
    const auto entry = s.ledger_entry_of(m["id"].get<std::string>());
    REQUIRE(entry);
    CHECK((*entry)["session_key"] == "header:" + session);
    // The client sends back what it received: every block (turn 0 and 2), or without the thinking
    // block (turn 1 and 3), as clients that drop thinking do.
    json content = json::array();
    for (const json& b : m["content"])
      if (turn % 2 == 0 || b["type"] != "thinking") content.push_back(b);
    messages.push_back({{"role", "assistant"}, {"content", content}});
    last_user = "Turn " + std::to_string(turn + 2) + ": go on.";
    messages.push_back(
        {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", last_user}}})}});
  }
}

TEST_CASE("http: messages: a greedy stream adds up to the non-streamed answer", "[http][anthropic]") {
  http_server s;
  const json body = greedy_request();
  json streamed_body = body;
  streamed_body["stream"] = true;
  const sse_stream st = s.stream("/v1/messages?beta=true", streamed_body, {}, claude_headers);
  REQUIRE(st.status == 200);
  CHECK(st.content_type.find("text/event-stream") == 0);
  const anthropic_accumulated acc = accumulate_anthropic(st.raw);
  INFO(st.raw.substr(0, 1200));
  for (const std::string& p : acc.problems) FAIL_CHECK(p);
  CHECK(acc.error.is_null());
  REQUIRE(acc.names.size() >= 4);
  CHECK(acc.names[0] == "message_start");
  CHECK(acc.names.back() == "message_stop");
  CHECK(std::count(acc.names.begin(), acc.names.end(), "ping") >= 1);
  CHECK(acc.message["id"].get<std::string>().rfind("msg_", 0) == 0);

  const json m = read_message(s.post_json("/v1/messages", body));
  CHECK_FALSE(blocks_text(m["content"], "thinking").empty());
  CHECK(blocks_text(acc.message["content"], "thinking") == blocks_text(m["content"], "thinking"));
  CHECK(blocks_text(acc.message["content"], "text") == blocks_text(m["content"], "text"));
  CHECK(acc.message["content"] == m["content"]);  // signatures included
  CHECK(acc.message["stop_reason"] == m["stop_reason"]);
  CHECK(acc.message["usage"]["output_tokens"] == m["usage"]["output_tokens"]);
  // the same prompt, counted once: input + read is the prompt on both
  const json& su = acc.message["usage"];
  CHECK(su["input_tokens"].get<long>() + su["cache_read_input_tokens"].get<long>() ==
        m["usage"]["input_tokens"].get<long>() + m["usage"]["cache_read_input_tokens"].get<long>());
  CHECK(su["cache_read_input_tokens"] == acc.x_cache["resumed_at"]);
}

TEST_CASE("http: messages: a stop sequence that cuts the answer is named, streamed or not",
          "[http][anthropic]") {
  http_server s;
  json body = greedy_request();
  body.erase("thinking");
  body["max_tokens"] = 24;
  const json free = read_message(s.post_json("/v1/messages", body));
  CHECK(free["stop_reason"] != "stop_sequence");  // max_tokens, or end_turn on a stop token
  CHECK(free["stop_sequence"].is_null());
  const std::string text = blocks_text(free["content"], "text");
  // Two printable ASCII characters of the greedy answer (two tokens: its bytes are the random
  // model's), so the stop string spans tokens.
  std::size_t at = 0;
  const auto printable = [](char c) { return c >= 0x21 && c <= 0x7e; };
  while (at + 2 <= text.size() && !(printable(text[at]) && printable(text[at + 1]))) ++at;
  INFO(json(text).dump());
  REQUIRE(at + 2 <= text.size());
  const std::string stop = text.substr(at, 2);
  const std::size_t first = text.find(stop);
  body["stop_sequences"] = json::array({"never in this answer", stop});

  const json cut = read_message(s.post_json("/v1/messages", body));
  CHECK(cut["stop_reason"] == "stop_sequence");
  CHECK(cut["stop_sequence"] == stop);
  CHECK(blocks_text(cut["content"], "text") == text.substr(0, first));

  json streamed_body = body;
  streamed_body["stream"] = true;
  const sse_stream st = s.stream("/v1/messages", streamed_body, {}, claude_headers);
  REQUIRE(st.status == 200);
  const anthropic_accumulated acc = accumulate_anthropic(st.raw);
  for (const std::string& p : acc.problems) FAIL_CHECK(p);
  CHECK(acc.message["stop_reason"] == "stop_sequence");
  CHECK(acc.message["stop_sequence"] == stop);
  CHECK(blocks_text(acc.message["content"], "text") == text.substr(0, first));
}

TEST_CASE("http: messages: a tool_use the client re-serialises still resumes at the end anchor",
          "[http][anthropic]") {
  http_server s;
  // The same conversation written twice by hand: the second time with the tool_use's members and
  // its input's keys in another order, other spacing and escapes, as a client's JSON library
  // writes it back.
  const std::string tools = R"([{"name": "read", "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}}}])";
  const std::string tools_again =
      R"([ {"input_schema":{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}}},"name":"read","description":"Read a file"} ])";
  const std::string first_turns = R"([{"role": "user", "content": "Read main.cpp."},
    {"role": "assistant", "content": [{"type": "text", "text": "Reading it."},
      {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "/src/main.cpp", "limit": 200}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "int main() {}"}]}])";
  const std::string first_turns_again = R"([{"content":"Read main.cpp.","role":"user"},
    {"role":"assistant","content":[{"text":"Reading it.","type":"text"},
      {"input":{ "limit" : 200 , "path" : "\/src\/main\u002ecpp" },"name":"read","id":"toolu_01","type":"tool_use"}]},
    {"content":[{"content":[{"type":"text","text":"int main() {}"}],"tool_use_id":"toolu_01","type":"tool_result"}],"role":"user"}])";
  const std::string first = R"({"max_tokens": 16, "system": "You are a coding agent.", "tools": )" + tools +
                            R"(, "messages": )" + first_turns + "}";
  const json m1 = read_message(s.post("/v1/messages", first));
  CHECK(m1["x_cache"]["source"] == "cold");

  // the earlier turns as re-serialised by hand, then the answer echoed and a new message
  const std::string msgs = first_turns_again.substr(0, first_turns_again.rfind(']')) + "," +
                           json{{"role", "assistant"}, {"content", m1["content"]}}.dump() +
                           R"(,{"role":"user","content":"Now explain it."}])";
  REQUIRE(json::parse(msgs, nullptr, false).size() == 5);
  const std::string second = R"({"system":"You are a coding agent.","max_tokens":16,"tools":)" + tools_again +
                             R"(,"messages":)" + msgs + "}";
  const json m2 = read_message(s.post("/v1/messages", second));
  CHECK(m2["x_cache"]["source"] == "end");
  CHECK(m2["usage"]["cache_read_input_tokens"].get<long>() > 0);
  CHECK(m2["usage"]["cache_read_input_tokens"] == m2["x_cache"]["resumed_at"]);
  // only the new turn is read (thinking off: the generation prompt closes an empty think block)
  const std::string glue =
      "<|im_end|>\n<|im_start|>user\nNow explain it.<|im_end|>\n<|im_start|>assistant\n"
      "<think>\n\n</think>\n\n";
  CHECK(m2["usage"]["input_tokens"].get<long>() <= static_cast<long>(count_tokens(glue)) + 4);
}

TEST_CASE("http: messages: count_tokens counts the rendered prompt", "[http][anthropic]") {
  http_server s;
  const json body = {{"model", "anchorage"},
                     {"system", billing_system(1)},
                     {"messages", json::array({{{"role", "user"}, {"content", "How many tokens?"}}})}};
  const http_reply r = s.post_json("/v1/messages/count_tokens?beta=true", body, claude_headers);
  INFO(r.body);
  REQUIRE(r.status == 200);
  const json counted = r.body_json();
  CHECK(counted.size() == 1);
  const long n = counted["input_tokens"];
  // the billing block costs nothing: another cch counts the same
  json other = body;
  other["system"] = billing_system(2);
  CHECK(s.post_json("/v1/messages/count_tokens", other).body_json()["input_tokens"] == n);
  // and it is the prompt a create request reads
  json create = body;
  create["max_tokens"] = 4;
  const json m = read_message(s.post_json("/v1/messages", create));
  CHECK(m["usage"]["input_tokens"].get<long>() + m["usage"]["cache_read_input_tokens"].get<long>() == n);
  check_anthropic_error(s.post_json("/v1/messages/count_tokens", {{"messages", 3}}), 400,
                        "invalid_request_error");
}

TEST_CASE("http: messages: bad input gets a 4xx in Anthropic's shape", "[http][anthropic]") {
  http_server s;
  const json ok = {{"max_tokens", 4}, {"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}};
  check_anthropic_error(s.post("/v1/messages", "{\"max_tokens\": 4, \"messages\": ["), 400,
                        "invalid_request_error");
  check_anthropic_error(s.post("/v1/messages?beta=true", ""), 400, "invalid_request_error");
  check_anthropic_error(s.post("/v1/messages", "[]"), 400, "invalid_request_error");
  json no_max = ok;
  no_max.erase("max_tokens");
  check_anthropic_error(s.post_json("/v1/messages", no_max), 400, "invalid_request_error");
  json no_messages = ok;
  no_messages.erase("messages");
  check_anthropic_error(s.post_json("/v1/messages", no_messages), 400, "invalid_request_error");
  json bad_role = ok;
  bad_role["messages"][0]["role"] = "tool";
  check_anthropic_error(s.post_json("/v1/messages", bad_role), 400, "invalid_request_error");
  json bad_type = ok;
  bad_type["temperature"] = "warm";
  check_anthropic_error(s.post_json("/v1/messages", bad_type), 400, "invalid_request_error");
  json bad_block = ok;
  bad_block["messages"][0]["content"] = json::array({{{"type", "hologram"}}});
  check_anthropic_error(s.post_json("/v1/messages", bad_block), 400, "invalid_request_error");
  json streamed_bad = no_max;
  streamed_bad["stream"] = true;
  check_anthropic_error(s.post_json("/v1/messages", streamed_bad), 400, "invalid_request_error");
  json other_model = ok;
  other_model["model"] = "claude-opus-4-1";
  check_anthropic_error(s.post_json("/v1/messages", other_model), 404, "not_found_error");
  check_anthropic_error(s.get("/v1/messages"), 404, "not_found_error");
  // a prompt over the context is the client's to fix
  json too_long = ok;
  too_long["messages"][0]["content"] =
      filler("a long prompt ", static_cast<std::size_t>(s.config().model().ctx_size) + 10);
  check_anthropic_error(s.post_json("/v1/messages", too_long), 400, "invalid_request_error");
  // and the server still answers
  const json m = read_message(s.post_json("/v1/messages", ok));
  CHECK(m["content"].is_array());
}

TEST_CASE("http: messages: the official SDK's accumulated stream equals the non-streamed answer",
          "[http][anthropic][sdk]") {
  const std::string npm_dir = std::string(ANCHORAGE_SOURCE_DIR) + "/tools/npm";
  if (const std::string why = sdk_missing(npm_dir); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  http_server s;
  const json body = greedy_request();
  const json m = read_message(s.post_json("/v1/messages", body));
  temp_dir dir("anchorage-sdk");
  {
    std::ofstream f(dir.file("request.json"));
    f << body.dump();
  }
  const std::string out = dir.file("out.json");
  const std::string cmd = "node " + npm_dir +
                          "/anthropic_sdk_stream.mjs http://127.0.0.1:" + std::to_string(s.port()) + " " +
                          dir.file("request.json") + " >" + out + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  INFO("node exit " << status << ": " << text.str().substr(0, 1500));
  const json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("message"));
  const json& sdk = j["message"];
  CHECK(sdk["id"].get<std::string>().rfind("msg_", 0) == 0);
  CHECK_FALSE(blocks_text(m["content"], "thinking").empty());
  CHECK(sdk["content"] == m["content"]);  // thinking (with its signature) and text, as the SDK built them
  CHECK(sdk["stop_reason"] == m["stop_reason"]);
  CHECK(sdk["usage"]["output_tokens"] == m["usage"]["output_tokens"]);
}
