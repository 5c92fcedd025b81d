// End-to-end: OpenAI's Responses API (POST /v1/responses) on a whole server over loopback. A
// conversation whose client sends back the output items it received (reasoning items included,
// or dropped) resumes at the end anchor and reports what it resumed as cached_tokens; so does one
// continued with previous_response_id; a stream adds up to the non-streamed answer; a
// function_call the client re-serialises costs nothing; bad input gets a 4xx in OpenAI's shape.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/api/responses_response.hpp"
#include "runtime/api/responses_sse_encoder.hpp"
#include "tests/support/mutated_bodies.hpp"
#include "tests/support/chat_turns.hpp"
#include "tests/support/responses_stream.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// Short reasoning, so that an answer holds reasoning and text.
const std::vector<std::string> budget_flags = {"--reasoning-budget", "6"};

// A response object, checked for OpenAI's members and a usage that adds up: what the cache
// restored is cached_tokens (x_cache.resumed_at).
json read_response(const http_reply& r) {
  INFO("reply " << r.status << ": " << r.body.substr(0, 800));
  REQUIRE(r.status == 200);
  CHECK(r.header("Content-Type").find("application/json") == 0);
  const json m = r.body_json();
  CHECK(m["id"].get<std::string>().rfind("resp_", 0) == 0);
  CHECK(m["object"] == "response");
  CHECK((m["status"] == "completed" || m["status"] == "incomplete"));
  REQUIRE(m["output"].is_array());
  CHECK_FALSE(m["output"].empty());
  const json& u = m["usage"];
  const json& x = m["x_cache"];
  CHECK(u["input_tokens_details"]["cached_tokens"] == x["resumed_at"]);
  CHECK(u["input_tokens"].get<long>() - u["input_tokens_details"]["cached_tokens"].get<long>() ==
        x["prefilled_tokens"].get<long>());
  CHECK(u["total_tokens"].get<long>() == u["input_tokens"].get<long>() + u["output_tokens"].get<long>());
  CHECK(u["output_tokens"].get<long>() > 0);
  return m;
}

// The text of the items of `type` (message: output_text parts; reasoning: reasoning_text parts).
std::string items_text(const json& output, const std::string& type) {
  std::string out;
  for (const json& item : output)
    if (item["type"] == type)
      for (const json& part : item["content"]) out += part["text"].get<std::string>();
  return out;
}

json greedy_request() {
  return {{"model", "anchorage"},      {"instructions", "You are terse."},
          {"input", "Count to five."}, {"max_output_tokens", 32},
          {"temperature", 0},          {"reasoning", {{"effort", "high"}}}};
}

// Why the official SDK cannot be run here, or "" when it can.
std::string sdk_missing(const std::string& npm_dir) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) return "node not found on PATH";
  if (!std::filesystem::exists(npm_dir + "/node_modules/openai/package.json"))
    return "openai is not installed at " + npm_dir + "/node_modules (tools/bootstrap test installs it)";
  return "";
}

// Runs the SDK script with `args`; its JSON answer.
json run_sdk(const std::string& npm_dir, const std::string& args, temp_dir& dir) {
  const std::string out = dir.file("out.json");
  const std::string cmd =
      "node " + npm_dir + "/openai_sdk_responses_stream.mjs " + args + " >" + out + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  INFO("node exit " << status << ": " << text.str().substr(0, 1500));
  const json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("response"));
  return j;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

}  // namespace

TEST_CASE("http: responses: every follow-up resumes at the end anchor with or without its reasoning",
          "[http][responses]") {
  http_server s(budget_flags);
  json input = json::array({{{"role", "user"}, {"content", "List the files in src."}}});
  long first_prompt = 0;
  std::string last_user = "List the files in src.";
  for (int turn = 0; turn < 4; ++turn) {
    INFO("turn " << turn);
    const json body = {{"model", "anchorage"},    {"instructions", system_prompt},       {"input", input},
                       {"max_output_tokens", 24}, {"reasoning", {{"effort", "medium"}}}, {"store", false}};
    const json m = read_response(s.post_json("/v1/responses", body));
    const json& x = m["x_cache"];
    const long cached = m["usage"]["input_tokens_details"]["cached_tokens"];
    if (turn == 0) {
      CHECK(x["source"] == "cold");
      CHECK(cached == 0);
      first_prompt = m["usage"]["input_tokens"];
    } else {
      CHECK(x["source"] == "end");
      CHECK(cached > first_prompt);  // past the system prompt and the first turn
      // only the new turn is read: the pending token, the glue and the new message
      CHECK(m["usage"]["input_tokens"].get<long>() - cached <=
            static_cast<long>(count_tokens(user_glue(last_user))) + 4);
    }
    REQUIRE_FALSE(items_text(m["output"], "reasoning").empty());
    // The client sends back what it received: every item (turns 0 and 2), or without the
    // reasoning item (turns 1 and 3), as clients that drop reasoning do.
    for (const json& item : m["output"])
      if (turn % 2 == 0 || item["type"] != "reasoning") input.push_back(item);
    last_user = "Turn " + std::to_string(turn + 2) + ": go on.";
    input.push_back({{"type", "message"},
                     {"role", "user"},
                     {"content", json::array({{{"type", "input_text"}, {"text", last_user}}})}});
  }
}

TEST_CASE("http: responses: a greedy stream adds up to the non-streamed answer", "[http][responses]") {
  http_server s(budget_flags);
  const json body = greedy_request();
  json streamed_body = body;
  streamed_body["stream"] = true;
  const sse_stream st = s.stream("/v1/responses", streamed_body);
  REQUIRE(st.status == 200);
  CHECK(st.content_type.find("text/event-stream") == 0);
  const responses_accumulated acc = accumulate_responses(st.raw);
  INFO(st.raw.substr(0, 2000));
  for (const std::string& p : acc.problems) FAIL_CHECK(p);
  CHECK(acc.error.is_null());
  CHECK(acc.names.front() == "response.created");
  CHECK((acc.names.back() == "response.completed" || acc.names.back() == "response.incomplete"));

  const json m = read_response(s.post_json("/v1/responses", body));
  CHECK_FALSE(items_text(m["output"], "reasoning").empty());
  CHECK(items_text(acc.output, "reasoning") == items_text(m["output"], "reasoning"));
  CHECK(items_text(acc.output, "message") == items_text(m["output"], "message"));
  CHECK(acc.response["output"] == acc.output);  // the final response holds the items streamed
  CHECK(acc.response["status"] == m["status"]);
  CHECK(acc.response["usage"]["output_tokens"] == m["usage"]["output_tokens"]);
  CHECK(acc.response["usage"]["input_tokens"] == m["usage"]["input_tokens"]);
  CHECK(acc.response["usage"]["input_tokens_details"]["cached_tokens"] ==
        acc.response["x_cache"]["resumed_at"]);
  // the same items but for their ids (each response has its own)
  REQUIRE(acc.output.size() == m["output"].size());
  for (std::size_t i = 0; i < acc.output.size(); ++i) {
    json a = acc.output[i], b = m["output"][i];
    a.erase("id");
    b.erase("id");
    CHECK(a == b);
  }
}

TEST_CASE("http: responses: a function_call the client re-serialises still resumes at the end anchor",
          "[http][responses]") {
  http_server s;
  // The same conversation written twice by hand: the second time with the items' members in
  // another order, other spacing and escapes, as a client's JSON library writes it back.
  const std::string tools = R"([{"type": "function", "name": "read", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}}}])";
  const std::string tools_again =
      R"([ {"parameters":{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}}},"name":"read","description":"Read a file","type":"function","strict":false} ])";
  const std::string first_items = R"([{"role": "user", "content": "Read main.cpp."},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading it."}]},
    {"type": "function_call", "call_id": "call_0", "name": "read", "arguments": "{\"path\":\"/src/main.cpp\",\"limit\":200}"},
    {"type": "function_call_output", "call_id": "call_0", "output": "int main() {}"}])";
  const std::string first_items_again = R"([{"content":"Read main.cpp.","role":"user"},
    {"content":[{"text":"Reading\u0020it.","annotations":[],"type":"output_text"}],"role":"assistant","type":"message","status":"completed"},
    {"arguments":"{\"path\":\"\/src\/main.cpp\",\"limit\":200}","name":"read","call_id":"call_0","type":"function_call","id":"fc_x"},
    { "output" : [{"type":"input_text","text":"int main() {}"}], "call_id" : "call_0", "type" : "function_call_output" }])";
  const std::string first = R"({"max_output_tokens": 16, "instructions": "You are a coding agent.",
    "reasoning": {"effort": "none"}, "tools": )" +
                            tools + R"(, "input": )" + first_items + "}";
  const json m1 = read_response(s.post("/v1/responses", first));
  CHECK(m1["x_cache"]["source"] == "cold");

  // the earlier items as re-serialised by hand, then the answer's items echoed and a new message
  std::string items = first_items_again.substr(0, first_items_again.rfind(']'));
  for (const json& item : m1["output"]) items += "," + item.dump();
  items += R"(,{"role":"user","content":"Now explain it."}])";
  REQUIRE(json::parse(items, nullptr, false).is_array());
  const std::string second = R"({"reasoning":{"effort":"minimal"},"instructions":"You are a coding agent.",)"
                             R"("max_output_tokens":16,"tools":)" +
                             tools_again + R"(,"input":)" + items + "}";
  const json m2 = read_response(s.post("/v1/responses", second));
  CHECK(m2["x_cache"]["source"] == "end");
  CHECK(m2["usage"]["input_tokens_details"]["cached_tokens"].get<long>() > 0);
  // only the new turn is read (thinking off: the generation prompt closes an empty think block)
  const std::string glue =
      "<|im_end|>\n<|im_start|>user\nNow explain it.<|im_end|>\n<|im_start|>assistant\n"
      "<think>\n\n</think>\n\n";
  CHECK(m2["usage"]["input_tokens"].get<long>() -
            m2["usage"]["input_tokens_details"]["cached_tokens"].get<long>() <=
        static_cast<long>(count_tokens(glue)) + 4);
}

TEST_CASE("http: responses: previous_response_id continues the stored conversation", "[http][responses]") {
  http_server s(budget_flags);
  json body = {{"instructions", system_prompt},
               {"input", "List the files in src."},
               {"max_output_tokens", 24},
               {"metadata", {{"run", "1"}}}};
  const json m1 = read_response(s.post_json("/v1/responses", body));
  CHECK(m1["store"] == true);
  CHECK(m1["metadata"] == json{{"run", "1"}});
  std::string previous = m1["id"];
  const long first_prompt = m1["usage"]["input_tokens"];
  for (int turn = 0; turn < 2; ++turn) {
    INFO("turn " << turn);
    const std::string user = "Turn " + std::to_string(turn + 2) + ": go on.";
    const json next = {{"instructions", system_prompt},
                       {"previous_response_id", previous},
                       {"input", json::array({{{"role", "user"}, {"content", user}}})},
                       {"max_output_tokens", 24},
                       {"stream", turn == 1}};
    json m;
    if (turn == 1) {
      const sse_stream st = s.stream("/v1/responses", next);
      REQUIRE(st.status == 200);
      const responses_accumulated acc = accumulate_responses(st.raw);
      for (const std::string& p : acc.problems) FAIL_CHECK(p);
      m = acc.response;
    } else {
      m = read_response(s.post_json("/v1/responses", next));
    }
    CHECK(m["previous_response_id"] == previous);
    CHECK(m["x_cache"]["source"] == "end");
    const long cached = m["usage"]["input_tokens_details"]["cached_tokens"];
    CHECK(cached == m["x_cache"]["resumed_at"].get<long>());
    CHECK(cached > first_prompt);
    CHECK(m["usage"]["input_tokens"].get<long>() - cached <=
          static_cast<long>(count_tokens(user_glue(user))) + 4);
    previous = m["id"];
  }
}

TEST_CASE("http: responses: a previous_response_id the server does not hold is a 404", "[http][responses]") {
  http_server s;
  const json unknown = {{"previous_response_id", "resp_nope"}, {"input", "Hi"}, {"max_output_tokens", 4}};
  const http_reply r = s.post_json("/v1/responses", unknown);
  check_error_body(r, 404, "invalid_request_error", "previous_response_id");
  CHECK(r.body_json()["error"]["code"] == "previous_response_not_found");
  // store: false is not kept
  const json m = read_response(
      s.post_json("/v1/responses", {{"input", "Hi"}, {"max_output_tokens", 4}, {"store", false}}));
  CHECK(m["store"] == false);
  const json after = {{"previous_response_id", m["id"]}, {"input", "Again"}, {"max_output_tokens", 4}};
  check_error_body(s.post_json("/v1/responses", after), 404, "invalid_request_error", "previous_response_id");
  json streamed = after;
  streamed["stream"] = true;
  check_error_body(s.post_json("/v1/responses", streamed), 404, "invalid_request_error",
                   "previous_response_id");
}

TEST_CASE("http: responses: bad input gets a 4xx in OpenAI's shape", "[http][responses]") {
  http_server s;
  const json ok = {{"input", "Hi"}, {"max_output_tokens", 4}};
  check_error_body(s.post("/v1/responses", "{\"input\": ["), 400, "invalid_request_error");
  check_error_body(s.post("/v1/responses", ""), 400, "invalid_request_error");
  check_error_body(s.post("/v1/responses", "[]"), 400, "invalid_request_error");
  check_error_body(s.post_json("/v1/responses", {{"max_output_tokens", 4}}), 400, "invalid_request_error",
                   "input");
  json bad_role = ok;
  bad_role["input"] = json::array({{{"role", "tool"}, {"content", "x"}}});
  check_error_body(s.post_json("/v1/responses", bad_role), 400, "invalid_request_error", "input[0].role");
  json bad_type = ok;
  bad_type["temperature"] = "warm";
  check_error_body(s.post_json("/v1/responses", bad_type), 400, "invalid_request_error", "temperature");
  json bad_item = ok;
  bad_item["input"] = json::array({{{"type", "hologram"}}});
  check_error_body(s.post_json("/v1/responses", bad_item), 400, "invalid_request_error", "input[0].type");
  json only_system = ok;
  only_system["input"] = json::array({{{"role", "developer"}, {"content", "x"}}});
  check_error_body(s.post_json("/v1/responses", only_system), 400, "invalid_request_error", "input");
  json streamed_bad = bad_item;
  streamed_bad["stream"] = true;
  check_error_body(s.post_json("/v1/responses", streamed_bad), 400, "invalid_request_error");
  json other_model = ok;
  other_model["model"] = "gpt-5";
  check_error_body(s.post_json("/v1/responses", other_model), 404, "not_found_error", "model");
  check_error_body(s.get("/v1/responses"), 404);
  // a prompt over the context is the client's to fix
  json too_long = ok;
  too_long["input"] = filler("a long prompt ", static_cast<std::size_t>(s.config().model().ctx_size) + 10);
  const http_reply r = s.post_json("/v1/responses", too_long);
  CHECK(r.status >= 400);
  CHECK(r.status < 500);
  check_error_body(r, r.status);
  // and the server still answers
  read_response(s.post_json("/v1/responses", ok));
}

TEST_CASE("http: responses: the official SDK's accumulated stream equals the non-streamed answer",
          "[http][responses][sdk]") {
  const std::string npm_dir = std::string(ANCHORAGE_SOURCE_DIR) + "/tools/npm";
  if (const std::string why = sdk_missing(npm_dir); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  temp_dir dir("anchorage-oai-sdk");
  SECTION("a live server's greedy answer: reasoning and text") {
    http_server s(budget_flags);
    const json body = greedy_request();
    const json m = read_response(s.post_json("/v1/responses", body));
    write_file(dir.file("request.json"), body.dump());
    const json j = run_sdk(
        npm_dir, "http://127.0.0.1:" + std::to_string(s.port()) + " " + dir.file("request.json"), dir);
    const json& sdk = j["response"];
    CHECK(sdk["id"].get<std::string>().rfind("resp_", 0) == 0);
    CHECK_FALSE(items_text(m["output"], "reasoning").empty());
    CHECK(items_text(sdk["output"], "reasoning") == items_text(m["output"], "reasoning"));
    CHECK(items_text(sdk["output"], "message") == items_text(m["output"], "message"));
    CHECK(j["output_text"] == items_text(m["output"], "message"));
    CHECK(sdk["status"] == m["status"]);
    CHECK(sdk["usage"]["output_tokens"] == m["usage"]["output_tokens"]);
  }
  SECTION("an answer with function calls, as the encoder streams it") {
    // The random model does not write tool calls: the encoder's stream of one (reasoning, text,
    // two calls) is replayed to the SDK by the script's own server.
    responses_meta meta;
    meta.id = "resp_5_1";
    meta.created_at = 1700000000;
    meta.model = "anchorage";
    assistant_output out;
    out.reasoning = "Two files to read.";
    out.content = "Reading both.";
    out.tool_calls = {{"call_0", "read", R"({"path": "/a", "limit": 5})"},
                      {"call_1", "read", R"({"path":"/b"})"}};
    usage_info usage{120, 30, 100, 6};
    x_cache_info cache;
    cache.source = cache_source::end;
    cache.resumed_at = 100;
    cache.prefilled_tokens = 20;
    responses_sse_encoder enc(meta);
    std::string raw;
    for (const std::string& c : enc.open()) raw += c;
    stream_event d;
    d.what = stream_event::kind::delta;
    for (const char* piece : {"Two files ", "to read."})
      d.deltas.push_back({output_delta::kind::reasoning, piece, {}, 0});
    for (const char* piece : {"Reading ", "both."})
      d.deltas.push_back({output_delta::kind::content, piece, {}, 0});
    d.deltas.push_back({output_delta::kind::tool_call, "", out.tool_calls[0], 0});
    d.deltas.push_back({output_delta::kind::tool_call, "", out.tool_calls[1], 1});
    stream_event fin;
    fin.what = stream_event::kind::finished;
    fin.finish_reason = run_finish::stop;
    fin.output = out;
    fin.usage = usage;
    fin.cache = cache;
    for (const stream_event& ev : {d, fin})
      for (const std::string& c : enc.feed(ev)) raw += c;
    write_file(dir.file("stream.sse"), raw);
    write_file(dir.file("request.json"), json{{"input", "Read a and b."}}.dump());
    const json j =
        run_sdk(npm_dir, "--replay " + dir.file("stream.sse") + " " + dir.file("request.json"), dir);
    const json whole =
        json::parse(responses_json_text(responses_body(meta, out, run_finish::stop, usage, cache)));
    json sdk_output = j["response"]["output"];
    for (json& item : sdk_output) {  // what the SDK's parse helpers add
      item.erase("parsed_arguments");
      if (item.contains("content"))
        for (json& part : item["content"]) part.erase("parsed");
    }
    CHECK(sdk_output == whole["output"]);  // reasoning, text and both calls
    CHECK(j["output_text"] == "Reading both.");
    CHECK(j["response"]["usage"] == whole["usage"]);
  }
}

TEST_CASE("http: responses: 500 mutated requests get a 200 or a 4xx in OpenAI's shape, never a 5xx",
          "[http][responses]") {
  http_server s;
  // A Codex-like request: instructions, replayed items of every kind, a function tool.
  const json base = json::parse(R"({"model": "anchorage", "instructions": "You are a coding agent.",
    "input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Sandbox on."}]},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the test."}]},
      {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look first."}], "encrypted_content": null},
      {"type": "function_call", "call_id": "call_0", "name": "shell", "arguments": "{\"cmd\":[\"ls\"]}"},
      {"type": "function_call_output", "call_id": "call_0", "output": "a.cpp"},
      {"role": "assistant", "content": [{"type": "output_text", "text": "Found it."}]},
      {"role": "user", "content": "Go on."}],
    "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {"cmd": {"type": "array"}}}}],
    "tool_choice": "auto", "reasoning": {"effort": "low"}, "max_output_tokens": 2, "temperature": 0,
    "store": false, "stream": false, "prompt_cache_key": "thread-1"})");
  const std::vector<std::string> bodies = mutated_bodies(base, "/input");
  INFO(bodies.size() << " bodies");
  REQUIRE(bodies.size() >= 500);
  int ok = 0, refused = 0;
  for (const std::string& body : bodies) {
    const http_reply r = s.post("/v1/responses", body);
    INFO(body.substr(0, 600));
    REQUIRE(r.status > 0);
    CHECK(r.status < 500);
    if (r.status == 200) {
      ++ok;
      continue;
    }
    ++refused;
    const json e = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    REQUIRE(e.is_object());
    CHECK(e["error"]["message"].is_string());
    CHECK(e["error"]["type"].is_string());
  }
  CHECK(ok > 0);
  CHECK(refused > 0);
  read_response(s.post_json("/v1/responses", base));
}
