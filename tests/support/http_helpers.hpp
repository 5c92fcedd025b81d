#pragma once
// Helpers shared by the end-to-end HTTP tests (tests/http/test_http_*.cpp).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "tests/support/http_fixture.hpp"
#include "runtime/text/template/chat_template.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/generation/generator.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/text/output/output_parser.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace std::chrono_literals;

namespace anchorage::testing {

inline const tokenizer tok;

inline json user_chat(const std::string& text, long max_tokens, double temperature = 0.0) {
  return {{"messages", json::array({{{"role", "user"}, {"content", text}}})},
          {"max_tokens", max_tokens},
          {"temperature", temperature}};
}

inline json small_completion(const std::string& text = "Hello there", long max_tokens = 4) {
  return {{"prompt", text}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

// A request every test can use to show the server still works.
inline void expect_valid_completion(const http_server& s) {
  const http_reply r = s.post_json("/v1/completions", small_completion());
  INFO(r.body.substr(0, 300));
  REQUIRE(r.status == 200);
  const json j = r.body_json();
  CHECK(j["object"] == "text_completion");
  CHECK(j["choices"][0]["text"].is_string());
  check_usage_and_cache(j);
}

// The engine's own output for `prompt`, from an engine built as the server builds its own
// (same config, same random weights seed), with the server's stop tokens.
struct engine_run {
  std::vector<token_id> tokens;
  run_finish reason = run_finish::stop;
};
inline engine_run run_engine(const server_config& cfg, const std::vector<token_id>& prompt, int max_tokens,
                             sampling_params sampling = {}) {
  const model_config c = cfg.engine.config();
  engine e(c, random_weights(c, cfg.engine.weights_seed));
  e.prefill(prompt);
  generation_request req;
  req.sampling = sampling;
  req.max_tokens = max_tokens;
  req.stop_tokens = {special_tokens::im_end, special_tokens::endoftext};
  generator g(e, req);
  engine_run out;
  out.tokens = g.run();
  out.reason = *g.reason();  // run() ran to the end
  return out;
}

// What the server makes of generated tokens (reasoning, content, tool calls).
// A chat with thinking starts inside the reasoning block (the generation prompt opens it).
inline assistant_output parse_tokens(const std::vector<token_id>& ids, bool reasoning, bool tools,
                                     bool starts_in_reasoning = false) {
  output_parser p(reasoning, tools, starts_in_reasoning);
  for (token_id t : ids) p.feed(t);
  p.finish();
  return p.result();
}

inline std::string finish_name(run_finish r) { return to_string(r); }

// A chat stream's deltas put back together, plus the checks every chat stream must pass:
// every data line JSON, the role chunk first, one id throughout, one finish chunk, the usage
// chunk (choices empty) last when asked for, then [DONE] and nothing after it.
struct chat_stream_summary {
  std::string id;
  std::string reasoning;
  std::string content;
  json tool_calls = json::array();
  std::string finish_reason;
  json usage_chunk;  // null unless include_usage
};
inline chat_stream_summary check_chat_stream(const sse_stream& s, bool include_usage) {
  INFO("stream: " << s.raw.substr(0, 800));
  REQUIRE(s.status == 200);
  CHECK(s.content_type.find("text/event-stream") == 0);
  CHECK(s.malformed.empty());
  REQUIRE(s.done());
  CHECK(s.events.back().what == sse_event::kind::done);
  CHECK(s.events_after_done == 0);
  CHECK(s.pending_.empty());
  const std::vector<json> chunks = s.chunks();
  REQUIRE(chunks.size() >= 2);
  chat_stream_summary out;
  out.id = chunks.front().value("id", "");
  CHECK(out.id.rfind("chatcmpl-", 0) == 0);
  // the role chunk
  REQUIRE(chunks.front()["choices"].size() == 1);
  CHECK(chunks.front()["choices"][0]["delta"] == json({{"role", "assistant"}, {"content", ""}}));
  CHECK(chunks.front()["choices"][0]["finish_reason"].is_null());
  std::size_t finishes = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const json& c = chunks[i];
    INFO("chunk " << i << ": " << c.dump());
    CHECK(c["object"] == "chat.completion.chunk");
    CHECK(c["id"] == out.id);
    CHECK(c["model"].is_string());
    CHECK(c["created"].is_number_integer());
    REQUIRE(c["choices"].is_array());
    const bool last = i + 1 == chunks.size();
    if (include_usage && last) {
      CHECK(c["choices"].empty());
      check_usage_and_cache(c);
      out.usage_chunk = c;
      continue;
    }
    CHECK_FALSE(c.contains("usage"));
    REQUIRE(c["choices"].size() == 1);
    const json& ch = c["choices"][0];
    CHECK(ch["index"] == 0);
    if (!ch["finish_reason"].is_null()) {
      ++finishes;
      out.finish_reason = ch["finish_reason"].get<std::string>();
      CHECK(ch["delta"] == json::object());
      CHECK(i + (include_usage ? 2 : 1) == chunks.size());
      continue;
    }
    const json& d = ch["delta"];
    if (i == 0) continue;
    if (d.contains("reasoning_content")) out.reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) out.content += d["content"].get<std::string>();
    if (d.contains("tool_calls"))
      for (const json& t : d["tool_calls"]) out.tool_calls.push_back(t);
  }
  CHECK(finishes == 1);
  if (!include_usage) CHECK_FALSE(chunks.back()["choices"].empty());
  return out;
}

// A POST written by hand on a raw socket, for what httplib's client will not send. Reads the
// reply until the server closes the connection (at most `timeout_s`).
struct raw_reply {
  int status = -1;
  std::string head, body;
};
inline raw_reply raw_http(int port, const std::string& request, bool half_close, int timeout_s = 10) {
  raw_reply out;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  timeval tv{timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  std::size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::string all;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    all.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const auto split = all.find("\r\n\r\n");
  out.head = all.substr(0, split);
  if (split != std::string::npos) out.body = all.substr(split + 4);
  if (all.rfind("HTTP/1.1 ", 0) == 0) out.status = std::atoi(all.c_str() + 9);
  return out;
}

inline std::string filler(const std::string& seed_text, std::size_t n) {
  std::string out;
  while (out.size() < n) out += seed_text;
  out.resize(n);
  return out;
}

inline std::vector<chat_message> to_messages(const json& messages) {
  std::vector<chat_message> out;
  for (const json& m : messages) {
    chat_message c;
    c.role = m["role"].get<std::string>();
    if (m.contains("content") && m["content"].is_string()) c.content = m["content"].get<std::string>();
    if (m.contains("reasoning_content")) c.reasoning_content = m["reasoning_content"].get<std::string>();
    if (m.contains("tool_calls"))
      for (const json& t : m["tool_calls"])
        c.tool_calls.push_back({t["id"].get<std::string>(), t["function"]["name"].get<std::string>(),
                                t["function"]["arguments"].get<std::string>()});
    if (m.contains("tool_call_id")) c.tool_call_id = m["tool_call_id"].get<std::string>();
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace anchorage::testing
