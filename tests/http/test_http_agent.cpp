// End-to-end: a request shaped like a real agent client's, and its follow-up rendered back.
#include "tests/support/http_helpers.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using namespace std::chrono_literals;

namespace {

// A system prompt of `system_chars` characters and ten tool definitions whose JSON totals about
// `tools_chars` characters (long descriptions, real parameter schemas), as opencode sends them.
struct opencode_shape {
  std::string system;
  json tools = json::array();
};
opencode_shape make_opencode_shape(std::size_t system_chars, std::size_t tools_chars) {
  opencode_shape out;
  out.system = filler(
      "You are opencode, an interactive CLI tool that helps users with software engineering tasks. "
      "Use the instructions below and the tools available to you to assist the user. IMPORTANT: Refuse to "
      "write "
      "code or explain code that may be used maliciously. When the user asks about a file, read it first. "
      "Keep your responses short: fewer than four lines unless the user asks for detail. Follow the existing "
      "conventions of the codebase, mimic its style, use its libraries and utilities.\n\n",
      system_chars);
  auto prop = [](const char* type, const char* desc) { return json{{"type", type}, {"description", desc}}; };
  const std::vector<std::pair<const char*, json>> specs = {
      {"bash",
       {{"command", prop("string", "The command to execute")},
        {"timeout", prop("number", "Optional timeout in milliseconds (max 600000)")},
        {"description",
         prop("string", "Clear, concise description of what this command does in 5-10 words")}}},
      {"read",
       {{"filePath", prop("string", "The absolute path to the file to read")},
        {"offset", prop("number", "The line number to start reading from (0-based)")},
        {"limit", prop("number", "The number of lines to read (defaults to 2000)")}}},
      {"write",
       {{"filePath",
         prop("string", "The absolute path to the file to write (must be absolute, not relative)")},
        {"content", prop("string", "The content to write to the file")}}},
      {"edit",
       {{"filePath", prop("string", "The absolute path to the file to modify")},
        {"oldString", prop("string", "The text to replace")},
        {"newString", prop("string", "The text to replace it with (must be different from oldString)")},
        {"replaceAll", prop("boolean", "Replace all occurrences of oldString (default false)")}}},
      {"glob",
       {{"pattern", prop("string", "The glob pattern to match files against")},
        {"path", prop("string", "The directory to search in. Defaults to the current working directory.")}}},
      {"grep",
       {{"pattern", prop("string", "The regex pattern to search for in file contents")},
        {"path", prop("string", "The directory to search in. Defaults to the current working directory.")},
        {"include",
         prop("string", "File pattern to include in the search (e.g. \"*.js\", \"*.{ts,tsx}\")")}}},
      {"list",
       {{"path",
         prop("string", "The absolute path to the directory to list (must be absolute, not relative)")},
        {"ignore",
         {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"description", "List of glob patterns to ignore"}}}}},
      {"webfetch",
       {{"url", prop("string", "The URL to fetch content from")},
        {"format",
         {{"type", "string"},
          {"enum", {"text", "markdown", "html"}},
          {"description", "The format to return"}}},
        {"timeout", prop("number", "Optional timeout in seconds (max 120)")}}},
      {"todowrite",
       {{"todos",
         {{"type", "array"},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"content", prop("string", "Brief description of the task")},
              {"status", prop("string", "pending, in_progress, completed, cancelled")},
              {"priority", prop("string", "high, medium, low")},
              {"id", prop("string", "Unique identifier for the todo item")}}},
            {"required", {"content", "status", "priority", "id"}}}},
          {"description", "The updated todo list"}}}}},
      {"task",
       {{"description", prop("string", "A short (3-5 words) description of the task")},
        {"prompt", prop("string", "The task for the agent to perform")},
        {"subagent_type", prop("string", "The type of specialized agent to use for this task")}}},
  };
  std::vector<json> tools;
  std::size_t bare = 0;
  for (const auto& [name, props] : specs) {
    json required = json::array();
    for (const auto& [k, v] : props.items()) required.push_back(k);
    json t = {{"type", "function"},
              {"function",
               {{"name", name},
                {"description", ""},
                {"parameters",
                 {{"type", "object"},
                  {"properties", props},
                  {"required", required},
                  {"additionalProperties", false},
                  {"$schema", "http://json-schema.org/draft-07/schema#"}}}}}};
    bare += t.dump().size();
    tools.push_back(std::move(t));
  }
  const std::size_t each = tools_chars > bare ? (tools_chars - bare) / tools.size() : 0;
  for (json& t : tools) {
    t["function"]["description"] = filler(
        "Use the " + t["function"]["name"].get<std::string>() +
            " tool when the task needs it. Usage notes: always prefer specialized tools over shell commands; "
            "batch independent calls together; never guess paths, list or glob first; report failures "
            "verbatim. ",
        each);
    out.tools.push_back(std::move(t));
  }
  return out;
}

// The conversation as the chat template sees it (independent of the server's request parser).

long rendered_tokens(const json& messages, const json& tools) {
  template_options t;
  t.tools = tools;
  return static_cast<long>(tok.encode(render_chat(to_messages(messages), t), true).size());
}

// opencode's first request, then its follow-ups on the same server: on a context of the longest
// prompt plus `room` tokens, or without `room` on the preset's own (32768).
void run_opencode_conversation(std::size_t system_chars, std::size_t tools_chars, std::optional<long> room) {
  const opencode_shape shape = make_opencode_shape(system_chars, tools_chars);
  std::size_t tools_json = 0;
  for (const json& t : shape.tools) tools_json += t.dump().size();
  INFO("system prompt " << shape.system.size() << " chars, tools " << tools_json << " chars of JSON");
  CHECK(shape.system.size() == system_chars);
  CHECK(shape.tools.size() == 10);
  CHECK(tools_json > tools_chars * 95 / 100);
  CHECK(tools_json < tools_chars * 105 / 100);

  const json first_messages =
      json::array({{{"role", "system"}, {"content", shape.system}},
                   {{"role", "user"},
                    {"content", "List the files in src and show me main.cpp, then tell me what it does."}}});
  // The assistant's reply as opencode sends it back: reasoning_content, null content, two calls.
  const json assistant = {
      {"role", "assistant"},
      {"content", nullptr},
      {"reasoning_content",
       "The user wants the files in src and the contents of main.cpp.\nI will list the directory "
       "and read the file in one batch, then summarise."},
      {"tool_calls",
       json::array(
           {{{"id", "call_0"},
             {"type", "function"},
             {"function", {{"name", "list"}, {"arguments", "{\"path\": \"/work/src\"}"}}}},
            {{"id", "call_1"},
             {"type", "function"},
             {"function",
              {{"name", "read"}, {"arguments", "{\"filePath\":\"/work/src/main.cpp\",\"limit\":200}"}}}}})}};
  const json list_result = {{"role", "tool"},
                            {"tool_call_id", "call_0"},
                            {"content", "main.cpp\nutil.cpp\nutil.hpp\nCMakeLists.txt"}};
  const json read_result = {
      {"role", "tool"},
      {"tool_call_id", "call_1"},
      {"content",
       "#include \"util.hpp\"\n\nint main(int argc, char** argv) {\n  return run(argc, argv);\n}\n"}};
  json continuation = first_messages;  // the agent loop: the tool results go straight back
  continuation.push_back(assistant);
  continuation.push_back(list_result);
  continuation.push_back(read_result);
  json follow_up = continuation;  // and then the user says something new
  follow_up.push_back(
      {{"role", "user"}, {"content", "Now add a --verbose flag to main and wire it through run()."}});

  const long first_tokens = rendered_tokens(first_messages, shape.tools);
  const long continuation_tokens = rendered_tokens(continuation, shape.tools);
  const long follow_up_tokens = rendered_tokens(follow_up, shape.tools);
  // The continuation keeps the reasoning (it follows the last user query) and the calls; the
  // follow-up's new user query drops the reasoning of the earlier turn, as Qwen3's template does.
  json without_reasoning = continuation;
  without_reasoning[2].erase("reasoning_content");
  REQUIRE(continuation_tokens > rendered_tokens(without_reasoning, shape.tools));
  json without_calls = continuation;
  without_calls[2].erase("tool_calls");
  REQUIRE(continuation_tokens > rendered_tokens(without_calls, shape.tools));

  // the continuation keeps the reasoning the follow-up drops: either may be the longer
  const long longest = std::max(continuation_tokens, follow_up_tokens);
  const long ctx = room ? longest + *room : preset_config("tiny").ctx_size;
  REQUIRE(longest < ctx);
  INFO("prompts " << first_tokens << ", " << continuation_tokens << ", " << follow_up_tokens
                  << " tokens; ctx " << ctx);
  http_server s({"--ctx-size", std::to_string(ctx)});

  auto request = [&](const json& messages) {
    return json{{"model", "anchorage"}, {"messages", messages},
                {"tools", shape.tools}, {"tool_choice", "auto"},
                {"stream", true},       {"stream_options", {{"include_usage", true}}},
                {"max_tokens", 32000}};
  };
  // max_tokens 32000 is more than the context has left: it is clamped, not refused.
  auto check_turn = [&](const json& messages, long expected_prompt) {
    const sse_stream st = s.stream("/v1/chat/completions", request(messages));
    const chat_stream_summary sum = check_chat_stream(st, /*include_usage=*/true);
    const json& usage = sum.usage_chunk["usage"];
    CHECK(usage["prompt_tokens"] == expected_prompt);
    const long completion = usage["completion_tokens"].get<long>();
    CHECK(completion <= ctx - expected_prompt);
    CHECK(
        (sum.finish_reason == "stop" || sum.finish_reason == "length" || sum.finish_reason == "tool_calls"));
    if (sum.finish_reason == "length") CHECK(completion == ctx - expected_prompt);
    // Each turn shares its head with the one before: a resume, then the rest prefilled.
    const json& x = sum.usage_chunk["x_cache"];
    CHECK(x["prefilled_tokens"].get<long>() == expected_prompt - x["resumed_at"].get<long>());
    CHECK(usage["prompt_tokens_details"]["cached_tokens"] == x["resumed_at"]);
  };
  {
    INFO("first request");
    check_turn(first_messages, first_tokens);
  }
  {
    INFO("continuation: assistant reasoning and tool calls, then the tool results");
    check_turn(continuation, continuation_tokens);
  }
  {
    INFO("follow-up: a new user message after the tool results");
    check_turn(follow_up, follow_up_tokens);
  }
  expect_valid_completion(s);
}

}  // namespace

// The real sizes (~10k characters of system prompt, ~21k of tool JSON: ~31.5k tokens with the
// byte-level tokenizer) take about 35 s per prefill on the CPU engine (its attention is
// quadratic; the three turns took 98 s here), too slow for every run: the [http] case runs the
// same conversation at a quarter of the size with a context just big enough for it; the hidden
// case, run with `anchorage_tests "[http-full]"`, runs the real sizes on the preset's 32768-token
// context. (It is not tagged [http], which would select it despite [.].)
TEST_CASE("http: an opencode-shaped conversation (quarter size)", "[http][opencode]") {
  // the context: the longest prompt plus 64 tokens, so that max_tokens 32000 is clamped to a few
  // hundred tokens on the first turn and to at most a hundred or so on the others
  run_opencode_conversation(2500, 5250, 64);
}

TEST_CASE("http: an opencode-shaped conversation (full size)", "[.][http-full]") {
  run_opencode_conversation(10000, 21000, std::nullopt);
}

// ---- 5. greedy output over HTTP equals the engine's ---------------------------------------------
