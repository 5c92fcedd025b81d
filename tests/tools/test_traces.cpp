// Trace replay: every trace recorded under tests/traces (tests/traces/record.sh) replays against a
// fresh in-process server with no mismatch, and an altered trace reports exactly what was altered.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tools/replay/trace_replay.hpp"
#include "tools/replay/wire_outcome.hpp"
#include "runtime/api/anthropic_response.hpp"
#include "runtime/api/anthropic_sse_encoder.hpp"
#include "runtime/api/responses_response.hpp"
#include "runtime/api/responses_sse_encoder.hpp"
#include "runtime/api/openai_response.hpp"
#include "runtime/server/trace.hpp"
#include "tests/support/encoded_stream.hpp"

using namespace anchorage;
using anchorage::testing::encoded_stream;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path traces_dir() { return fs::path(__FILE__).parent_path().parent_path() / "traces"; }

std::vector<fs::path> recorded_traces() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(traces_dir()))
    if (e.is_regular_file() && e.path().extension() == ".jsonl") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<json> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(json::parse(line));
  return lines;
}

// Writes `lines` to a fresh temporary file, removed when this goes out of scope.
struct temp_trace {
  fs::path path;
  explicit temp_trace(const std::vector<json>& lines) {
    static int n = 0;
    path = fs::temp_directory_path() /
           ("anchorage-trace-" + std::to_string(::getpid()) + "-" + std::to_string(++n) + ".jsonl");
    std::ofstream out(path, std::ios::trunc);
    for (const auto& l : lines) out << l.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
  }
  ~temp_trace() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

std::string dumped(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string all_of(const replay_report& r) {
  std::string s;
  for (const auto& m : r.mismatches) s += m + "\n";
  return s;
}

}  // namespace

TEST_CASE("every recorded trace replays without a mismatch", "[trace]") {
  const auto traces = recorded_traces();
  // the two traces the suite is built around must be there
  const auto has = [&](const char* name) {
    return std::any_of(traces.begin(), traces.end(), [&](const fs::path& p) { return p.filename() == name; });
  };
  REQUIRE(has("basic.jsonl"));
  REQUIRE(has("agent.jsonl"));
  REQUIRE(has("wires.jsonl"));
  for (const auto& path : traces) {
    const replay_report r = replay_trace(path.string());
    INFO(path.filename().string() << ": " << r.requests << " requests replayed in " << r.seconds
                                  << " s; mismatches:\n"
                                  << all_of(r));
    CHECK(r.requests == read_lines(path).size() - 1);
    REQUIRE(r.requests > 0);
    REQUIRE(r.mismatches.empty());
  }
}

TEST_CASE("an altered trace replays with exactly the alteration as its mismatch", "[trace]") {
  const fs::path basic = traces_dir() / "basic.jsonl";
  std::vector<json> lines = read_lines(basic);
  REQUIRE(lines.size() > 5);
  // lines[0] is the header; request i is lines[i + 1], on file line i + 2
  REQUIRE(lines[1]["route"] == "/v1/completions");
  REQUIRE(lines[4]["route"] == "/v1/chat/completions");
  REQUIRE(lines[4]["body"].value("stream", false));

  SECTION("a completion's text") {
    const json original = lines[1]["outcome"]["text"];
    lines[1]["outcome"]["text"] = "altered";
    temp_trace t(lines);
    const replay_report r = replay_trace(t.path.string());
    INFO(all_of(r));
    CHECK(r.requests == lines.size() - 1);
    REQUIRE(r.mismatches.size() == 1);
    CHECK(r.mismatches[0] ==
          "request 0 (line 2, /v1/completions): outcome.text: expected \"altered\", got " + dumped(original));
  }
  SECTION("a streamed chat's content and usage") {
    const json original = lines[4]["outcome"]["content"];
    const json prompt = lines[4]["outcome"]["usage"]["prompt_tokens"];
    lines[4]["outcome"]["content"] = "altered";
    lines[4]["outcome"]["usage"]["prompt_tokens"] = prompt.get<long>() + 1;
    temp_trace t(lines);
    const replay_report r = replay_trace(t.path.string());
    INFO(all_of(r));
    REQUIRE(r.mismatches.size() == 2);
    CHECK(r.mismatches[0] ==
          "request 3 (line 5, /v1/chat/completions): outcome.content: expected \"altered\", got " +
              dumped(original));
    CHECK(r.mismatches[1] ==
          "request 3 (line 5, /v1/chat/completions): outcome.usage.prompt_tokens: expected " +
              std::to_string(prompt.get<long>() + 1) + ", got " + dumped(prompt));
  }
  SECTION("a ledger field") {
    const json original = lines[2]["ledger"]["prefilled"];
    lines[2]["ledger"]["prefilled"] = original.get<long>() - 1;
    temp_trace t(lines);
    const replay_report r = replay_trace(t.path.string());
    INFO(all_of(r));
    REQUIRE(r.mismatches.size() == 1);
    CHECK(r.mismatches[0] == "request 1 (line 3, /v1/completions): ledger.prefilled: expected " +
                                 std::to_string(original.get<long>() - 1) + ", got " + dumped(original));
  }
  SECTION("an error's message") {
    std::size_t i = 0;
    while (i + 1 < lines.size() && lines[i + 1]["outcome"]["status"] != 404) ++i;
    REQUIRE(i + 1 < lines.size());
    const json original = lines[i + 1]["outcome"]["message"];
    lines[i + 1]["outcome"]["message"] = "altered";
    temp_trace t(lines);
    const replay_report r = replay_trace(t.path.string());
    INFO(all_of(r));
    REQUIRE(r.mismatches.size() == 1);
    CHECK(r.mismatches[0] == "request " + std::to_string(i) + " (line " + std::to_string(i + 2) +
                                 ", /v1/completions): outcome.message: expected \"altered\", got " +
                                 dumped(original));
  }
}

TEST_CASE("a trace whose header is not a trace header is refused", "[trace]") {
  temp_trace t(std::vector<json>{json{{"preset", "tiny"}}});
  CHECK_THROWS_WITH(replay_trace(t.path.string()), Catch::Contains("trace header"));
  CHECK_THROWS_WITH(replay_trace((traces_dir() / "no-such-trace.jsonl").string()),
                    Catch::Contains("cannot read"));
}

// The random tiny model never calls a tool; the rebuilding of tool calls, the chat finish reason
// and in-stream errors is checked against the server's own builders instead.
TEST_CASE("outcomes rebuilt from responses are what trace_outcome records", "[trace]") {
  assistant_output out;
  out.reasoning = "think \xC3\x9F";
  out.content = "";
  out.tool_calls = {{"call_0", "read", "{\"filePath\":\"/a\"}"}, {"call_1", "bash", "{\"command\":\"ls\"}"}};
  const usage_info usage{40, 12, 8};
  const x_cache_info x{};

  SECTION("a chat body with tool calls") {
    const json body = chat_body("chatcmpl-1", 0, "m", out, run_finish::stop, usage, x);
    CHECK(replay_outcome_from_body(request_kind::chat, 200, json_text(body)) ==
          trace_outcome(request_kind::chat, run_finish::stop, out, usage));
    const json cut = chat_body("chatcmpl-1", 0, "m", out, run_finish::length, usage, x);
    CHECK(replay_outcome_from_body(request_kind::chat, 200, json_text(cut)) ==
          trace_outcome(request_kind::chat, run_finish::length, out, usage));
  }
  SECTION("a chat stream with tool calls, with and without its usage chunk") {
    std::string sse = sse_data(chat_chunk_role("c", 0, "m")) + ": prefill 32/40\n\n";
    output_delta r;
    r.what = output_delta::kind::reasoning;
    r.text = "think ";
    sse += sse_data(chat_chunk_delta("c", 0, "m", r));
    r.text = "\xC3\x9F";
    sse += sse_data(chat_chunk_delta("c", 0, "m", r));
    for (int i = 0; i < 2; ++i) {
      output_delta d;
      d.what = output_delta::kind::tool_call;
      d.call = out.tool_calls[static_cast<std::size_t>(i)];
      d.index = i;
      sse += sse_data(chat_chunk_delta("c", 0, "m", d));
    }
    sse += sse_data(chat_chunk_finish("c", 0, "m", chat_finish_reason(out, run_finish::stop)));
    const json expected = trace_outcome(request_kind::chat, run_finish::stop, out, usage);
    CHECK(replay_outcome_from_sse(request_kind::chat,
                                  sse + sse_data(chat_chunk_usage("c", 0, "m", usage, x)) + sse_done(),
                                  nullptr) == expected);
    const json ledger = {{"prompt_tokens", 40}, {"prefilled", 32}, {"output_tokens", 12}};
    CHECK(replay_outcome_from_sse(request_kind::chat, sse + sse_done(), ledger) == expected);
    CHECK_FALSE(replay_outcome_from_sse(request_kind::chat, sse + sse_done(), nullptr).contains("usage"));
  }
  SECTION("a completion stream") {
    const std::string sse = sse_data(completion_chunk("c", 0, "m", "ab")) +
                            sse_data(completion_chunk("c", 0, "m", "c")) +
                            sse_data(completion_chunk_finish("c", 0, "m", run_finish::length)) +
                            sse_data(completion_chunk_usage("c", 0, "m", usage, x)) + sse_done();
    assistant_output text;
    text.content = "abc";
    CHECK(replay_outcome_from_sse(request_kind::completion, sse, nullptr) ==
          trace_outcome(request_kind::completion, run_finish::length, text, usage));
    CHECK(replay_outcome_from_body(
              request_kind::completion, 200,
              json_text(completion_body("c", 0, "m", "abc", run_finish::length, usage, x))) ==
          trace_outcome(request_kind::completion, run_finish::length, text, usage));
  }
  SECTION("errors") {
    const api_error e{400, "invalid_request_error", "the prompt is empty", "prompt"};
    CHECK(replay_outcome_from_body(request_kind::chat, 400, json_text(error_body(e))) == trace_error(e));
    // inside a stream the status is not visible: everything else is
    json seen = trace_error(e);
    seen.erase("status");
    CHECK(
        replay_outcome_from_sse(request_kind::chat,
                                sse_data(chat_chunk_role("c", 0, "m")) + sse_data(error_body(e)) + sse_done(),
                                nullptr) == seen);
  }
}

namespace {

// A finished turn's events as the board sends them: one delta event per piece, then finished.
std::vector<stream_event> turn_events(const assistant_output& out, run_finish finish, const usage_info& usage,
                                      const x_cache_info& x) {
  stream_event d;
  d.what = stream_event::kind::delta;
  if (!out.reasoning.empty()) d.deltas.push_back({output_delta::kind::reasoning, out.reasoning, {}, 0});
  if (!out.content.empty()) d.deltas.push_back({output_delta::kind::content, out.content, {}, 0});
  for (std::size_t i = 0; i < out.tool_calls.size(); ++i)
    d.deltas.push_back({output_delta::kind::tool_call, "", out.tool_calls[i], static_cast<int>(i)});
  stream_event f;
  f.what = stream_event::kind::finished;
  f.finish_reason = finish;
  f.output = out;
  f.usage = usage;
  f.cache = x;
  return {d, f};
}

}  // namespace

TEST_CASE("outcomes rebuilt from the agent wires are what trace_outcome records", "[trace]") {
  assistant_output out;
  out.reasoning = "think \xC3\x9F";
  out.content = "Reading.";
  // arguments as the model wrote them: spaces, key order; the messages wire re-dumps them
  out.tool_calls = {{"call_0", "read", "{\"zeta\": 1, \"alpha\": \"/a\"}"}, {"call_1", "bash", ""}};
  const usage_info usage{40, 12, 8, 5};
  x_cache_info x;
  x.resumed_at = 8;  // what the wires report as cached: resumed_at, here prompt - prefilled
  CHECK(wire_of_path("/v1/messages") == replay_wire::messages);
  CHECK(wire_of_path("/v1/responses") == replay_wire::responses);
  CHECK(wire_of_path("/v1/chat/completions") == replay_wire::chat);
  CHECK(wire_of_path("/v1/completions") == replay_wire::completions);

  for (run_finish finish : {run_finish::stop, run_finish::length}) {
    INFO(finish);
    const json recorded = trace_outcome(request_kind::chat, finish, out, usage);
    const json shown = messages_view(recorded);
    CHECK(shown["tool_calls"][0]["arguments"] == R"({"zeta":1,"alpha":"/a"})");
    CHECK(shown["tool_calls"][1]["arguments"] == "{}");
    CHECK(messages_outcome_from_body(200, anthropic_json_text(anthropic_message_body(
                                              "msg_1", "m", out, finish, usage, x))) == shown);
    CHECK(messages_outcome_from_sse(encoded_stream(anthropic_sse_encoder("msg_1", "m"),
                                                   turn_events(out, finish, usage, x))) == shown);
    const responses_meta meta{"resp_1", 0, "m", {}};
    CHECK(responses_outcome_from_body(
              200, responses_json_text(responses_body(meta, out, finish, usage, x))) == recorded);
    CHECK(responses_outcome_from_sse(
              encoded_stream(responses_sse_encoder(meta), turn_events(out, finish, usage, x))) == recorded);
  }
  const api_error e{400, "invalid_request_error", "messages must be an array", "messages"};
  CHECK(messages_outcome_from_body(400, anthropic_json_text(anthropic_error_body(e))) == trace_error(e));
  CHECK(responses_outcome_from_body(400, responses_json_text(responses_error_body(e))) == trace_error(e));
}
