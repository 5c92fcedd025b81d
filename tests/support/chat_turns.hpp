#pragma once
// Conversations over HTTP turn by turn: requests whose answers survive the round trip to the
// client and back, and the template glue a turn adds after an echoed answer.
#include "tests/support/http_helpers.hpp"

namespace anchorage::testing {

// OpenAI logit_bias that leaves only the letters a..z: answers that survive the round trip to
// the client and back (the random tiny model would otherwise write invalid UTF-8 and specials).
inline json letters_only() {
  json b = json::object();
  for (int id = 0; id < vocab_size(); ++id)
    if (id < 'a' || id > 'z') b[std::to_string(id)] = -100;
  return b;
}

inline json chat_body(const json& messages, std::uint64_t seed, long max_tokens = 120) {
  return json{{"model", "anchorage"}, {"messages", messages}, {"max_tokens", max_tokens},
              {"temperature", 0.8},   {"seed", seed},         {"logit_bias", letters_only()}};
}

// A greedy turn without thinking whose answer survives the round trip (letters only).
inline json greedy_turn(const json& messages, long max_tokens) {
  json b = chat_body(messages, 5, max_tokens);
  b["temperature"] = 0;
  b["chat_template_kwargs"] = {{"enable_thinking", false}};
  return b;
}

inline std::size_t count_tokens(const std::string& text) { return tok.encode(text, true).size(); }

struct turn_reply {
  json message;
  json x_cache;
  json usage;
  std::string finish_reason;
};

// The reply to one chat turn, read. Catch2's assertions are not thread-safe: a request sent from a
// second thread keeps its http_reply (send_turn) and is read here on the test's own thread.
inline turn_reply read_turn(const http_reply& r) {
  INFO(r.body.substr(0, 400));
  REQUIRE(r.status == 200);
  const json j = r.body_json();
  turn_reply t;
  t.message = j["choices"][0]["message"];
  t.finish_reason = j["choices"][0]["finish_reason"];
  t.x_cache = j["x_cache"];
  t.usage = j["usage"];
  return t;
}

// A chat turn sent without any assertion: safe from a second thread.
inline http_reply send_turn(const http_server& s, const json& body, const httplib::Headers& headers = {}) {
  return s.post_json("/v1/chat/completions", body, headers);
}

inline turn_reply post_turn(const http_server& s, const json& body, const httplib::Headers& headers = {}) {
  return read_turn(send_turn(s, body, headers));
}

// The client's next turn: the answer echoed back as the assistant's message, then `next` from the
// user.
inline void echo_turn(json& messages, const turn_reply& t, const std::string& next) {
  messages.push_back({{"role", "assistant"}, {"content", t.message.value("content", "")}});
  messages.push_back({{"role", "user"}, {"content", next}});
}

inline const char* system_prompt =
    "You are a coding agent. Read the files you are asked about, run the tools you need and keep "
    "your answers short.";

// Glue after an answer the client echoed: the template's end of the assistant turn, the new
// message, and the generation prompt (which opens the reasoning block).
inline std::string tool_glue(const std::string& result) {
  return "<|im_end|>\n<|im_start|>user\n<tool_response>\n" + result +
         "\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n";
}
inline std::string user_glue(const std::string& text) {
  return "<|im_end|>\n<|im_start|>user\n" + text + "<|im_end|>\n<|im_start|>assistant\n<think>\n";
}

}  // namespace anchorage::testing
