#pragma once
// The typed vocabulary of the OpenAI-compatible HTTP edge: what a request asks for, what an
// error says, and what a response reports. Plain data; parsing and JSON shapes live in
// runtime/api/openai_request.hpp and runtime/api/openai_response.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/cache_source.hpp"
#include "protocol/chat_message.hpp"
#include "protocol/miss_stats.hpp"

namespace anchorage {

// An error as the client sees it: the HTTP status and OpenAI's {"error":{...}} fields. `code` has
// a default so that `api_error{status, type, message, param}` leaves it empty.
struct api_error {
  int status = 400;
  std::string type;     // invalid_request_error | not_found_error | authentication_error |
                        // permission_error | rate_limit_error | server_error
  std::string message;  // human-readable: says what is wrong
  std::string param;    // the offending field ("messages[2].role"), empty when none
  std::string code{};   // a machine-readable reason (e.g. "context_length_exceeded"), or empty
};

// A validated /v1/completions or /v1/chat/completions request. Only the fields of `kind` are
// set; the others keep their defaults.
struct completion_request {
  request_kind kind = request_kind::completion;
  std::string model;  // empty when the client omitted it

  // completion: exactly one of these is set, and it is non-empty
  std::optional<std::string> prompt_text;
  std::optional<std::vector<std::int32_t>> prompt_tokens;  // each in [0, vocab size)

  // chat
  std::vector<chat_message> messages;  // non-empty
  // OpenAI tool definitions, as given: keys in the client's order, which the templates' `tojson`
  // text of each tool depends on.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  std::string tool_choice = "auto";  // auto | none | required | function:NAME
  bool enable_thinking = true;       // chat_template_kwargs.enable_thinking
  // The request's own reasoning budget (Anthropic's thinking.budget_tokens): reasoning tokens
  // before a hidden close, the lesser of it and --reasoning-budget when both are set; absent: the
  // server's.
  std::optional<long> reasoning_budget;

  // both
  std::optional<long> max_tokens;  // max_completion_tokens or max_tokens, >= 1; absent = no limit
  double temperature = 1.0;        // [0, 2]
  bool temperature_given = false;  // the client sent it (an omitted one is OpenAI's 1.0)
  // top_k, an integer >= 0 (0: no limit). 1 is greedy whatever the temperature; the sampler has
  // no other top-k (a larger one samples as without it).
  std::optional<long> top_k;
  double top_p = 1.0;  // (0, 1]
  std::optional<std::uint64_t> seed;
  std::vector<std::string> stop;  // at most 4, each non-empty
  // logit_bias: (token id in [0, vocab size), bias in [-100, 100]), at most 300, ascending ids
  std::vector<std::pair<std::int32_t, float>> logit_bias;
  // response_format as sent (null when absent): not honoured yet, but it changes what a client
  // expects, so the response cache keys on it.
  nlohmann::ordered_json response_format;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage, as sent (meaningful if stream)
  // return_progress (llama.cpp's name): a streamed request's prefill reported in data chunks
  // ("prompt_progress"), not only as SSE comments.
  bool return_progress = false;
  std::optional<std::string> prompt_cache_key;
  std::string user;
  // The client's session id from the X-Session-Id (or x-session-affinity) header: opencode sends
  // the same `ses_...` on a session's title, main and compaction requests. Empty: none.
  std::string session_header;
  std::string user_agent;  // the User-Agent header (opencode's opens "opencode/")
};

struct usage_info {
  long prompt_tokens = 0;
  long completion_tokens = 0;
  long cached_tokens = 0;     // prompt tokens whose state was restored instead of prefilled
  long reasoning_tokens = 0;  // completion tokens generated inside the reasoning block
};

// Where the prompt's state came from; reported to clients as the extension field "x_cache".
struct x_cache_info {
  cache_source source = cache_source::cold;  // cold, or the tier the state was restored from
  long resumed_at = 0;                       // prompt position the restored state covers
  long prefilled_tokens = 0;                 // prompt tokens actually forwarded
  double restore_ms = 0;
  double ttft_ms = 0;
  cache_via via = cache_via::none;  // what served it beyond the source (omitted when none)
  long slot = -1;                   // the slot (--parallel) it ran on; -1 when not known
  // Why it resumed less deep than its prompt shared with what the server held, and the tokens
  // that cost (docs/CACHES.md, "Miss reasons"); none when it resumed as deep as it shared, or
  // when the tiers did not plan it (a replayed answer, the cache off).
  std::optional<miss_reason> miss;
  long miss_tokens = 0;
};

// The assistant's turn, split the way OpenAI's chat message is.
struct assistant_output {
  std::string reasoning;
  std::string content;
  std::vector<tool_call> tool_calls;
};

// One increment of assistant_output. For reasoning and content, `text` is appended to the
// matching field; for tool_call, `call` is the whole call and `index` its position in
// assistant_output::tool_calls.
struct output_delta {
  enum class kind { reasoning, content, tool_call } what = kind::content;
  std::string text;
  tool_call call;
  int index = 0;
};

}  // namespace anchorage
