// End-to-end: a compaction request as opencode sends it (its summarisation agent's system text
// and the whole history flattened into one user message) is served as the continuation of the
// conversation the session holds: the prefill reads only the continuation turn, never the
// transcript, and the conversation's next ordinary turn still resumes at its end anchor. A
// request whose first or last user line the held conversation does not hold is served as sent.
#include <chrono>
#include <string>
#include <thread>

#include "runtime/compaction/opencode_compaction.hpp"
#include "tests/support/chat_turns.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

const httplib::Headers session = {{"x-session-id", "ses_0123456789abcdef"},
                                  {"x-session-affinity", "ses_0123456789abcdef"}};

turn_reply post_session(const http_server& s, const json& body) { return post_turn(s, body, session); }

// tiers.compaction once the board has reported `served` compaction requests (its stats reach the
// conductor beside the answer, not before it).
json compaction_json(const http_server& s) {
  REQUIRE(s.quiesce());
  return s.get("/v1/cache/stats")
      .body_json()
      .value("tiers", json::object())
      .value("compaction", json::object());
}

const char* summarizer =
    "You are a context summarization agent. You are given a conversation between a user and an agent. "
    "Your goal is to produce a structured summary matching the format specified so another coding agent "
    "can continue the work.\n";
const char* instructions =
    "Create a new anchored summary from the conversation history in the <conversation> tags above so "
    "another coding agent can continue the work.\n\nOutput exactly the Markdown structure shown inside "
    "<template>.\n<template>\n## Objective\n- [one or two brief sentences]\n</template>";

// The history flattened as opencode does: quoted user lines, the answers as they were streamed.
json compaction_body(const json& messages, const std::string& first_user_override = {}) {
  std::string t = "Here is the conversation so far:\n\n<conversation>\n";
  bool first = true;
  for (const json& m : messages) {
    const std::string role = m["role"];
    if (role == "user") {
      const std::string text =
          first && !first_user_override.empty() ? first_user_override : m["content"].get<std::string>();
      t += "[User]: " + json(text).dump() + "\n\n";
      first = false;
    } else if (role == "assistant") {
      t += "[Assistant]: " + m["content"].get<std::string>() + "\n\n";
    }
  }
  t += "</conversation>\n\n";
  t += instructions;
  json b = {{"model", "anchorage"},
            {"max_tokens", 12},
            {"temperature", 0},
            {"logit_bias", letters_only()},
            {"messages", json::array({{{"role", "system"}, {"content", summarizer}},
                                      {{"role", "user"}, {"content", t}}})}};
  return b;
}

// The conversation's first turn on `s`, its answer appended: what every case starts from.
json first_turn(const http_server& s) {
  json messages = json::array({{{"role", "system"}, {"content", filler(system_prompt, 900)}},
                               {{"role", "user"}, {"content", "List the files in src."}}});
  const turn_reply t1 = post_session(s, greedy_turn(messages, 12));
  messages.push_back({{"role", "assistant"}, {"content", t1.message.value("content", "")}});
  return messages;
}

}  // namespace

TEST_CASE("http: a compaction request is served as the continuation of the session's conversation",
          "[http][compaction]") {
  http_server s;
  json messages = first_turn(s);
  messages.push_back({{"role", "user"}, {"content", "Now read main.cpp."}});
  const turn_reply t2 = post_session(s, greedy_turn(messages, 12));
  REQUIRE(t2.x_cache["source"] == "end");
  messages.push_back({{"role", "assistant"}, {"content", t2.message.value("content", "")}});
  const long end_rows = s.get("/v1/cache/stats").body_json()["tiers"]["resident"]["end_anchor"].get<long>();

  // The compaction: only the continuation turn is read.
  const json body = compaction_body(messages);
  const turn_reply c = post_session(s, body);
  INFO(c.x_cache.dump());
  CHECK(c.x_cache["via"] == "compaction");
  CHECK(c.x_cache["source"] == "end");
  CHECK(c.x_cache["resumed_at"] == end_rows);
  const std::string turn = std::string("<|im_end|>\n<|im_start|>user\n") + summarizer + "\n\n" +
                           instructions + "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  CHECK(c.x_cache["prefilled_tokens"].get<long>() <= static_cast<long>(count_tokens(turn)) + 2);
  // The prompt served is the rows and that turn: the transcript is never read.
  CHECK(c.usage["prompt_tokens"].get<long>() == end_rows + c.x_cache["prefilled_tokens"].get<long>());
  CHECK(c.usage["prompt_tokens_details"]["cached_tokens"] == end_rows);

  // The conversation goes on from its end anchor, as if the compaction had not run.
  messages.push_back({{"role", "user"}, {"content", "And the tests?"}});
  const turn_reply t3 = post_session(s, greedy_turn(messages, 8));
  CHECK(t3.x_cache["source"] == "end");
  CHECK(t3.x_cache["resumed_at"] == end_rows);
  const json stats = compaction_json(s);
  CHECK(stats["continuations"] == 1);
  CHECK(stats["as_sent"] == 0);
  CHECK_THAT(s.get("/metrics").body,
             Catch::Contains("anchorage_compactions_total{served=\"continuation\"} 1"));
}

TEST_CASE("http: a compaction whose first user line the held conversation lacks is served as sent",
          "[http][compaction]") {
  http_server s;
  json messages = first_turn(s);
  const json body = compaction_body(messages, "Something this conversation never said.");
  const turn_reply c = post_session(s, body);
  CHECK(c.x_cache.value("via", "") != "compaction");
  CHECK(c.x_cache["prefilled_tokens"] == c.usage["prompt_tokens"]);
  CHECK(compaction_json(s)["as_sent"] == 1);
  // With --compaction off, a compaction the held conversation would pass is served as sent too.
  http_server off({"--compaction", "off"});
  const json again = first_turn(off);
  REQUIRE(again == messages);
  const turn_reply o = post_session(off, compaction_body(again));
  CHECK(o.x_cache.value("via", "") != "compaction");
  CHECK(o.x_cache["prefilled_tokens"] == o.usage["prompt_tokens"]);
}

namespace {

// tiers.compaction once the worker has finished `runs` idle runs (or after 60 s).
json worker_finished(const http_server& s, long runs) {
  CHECK(s.wait_idle_runs(runs));
  return compaction_json(s);
}

// opencode 1.18.33's compaction request for `messages`, its agent and instructions as it sends
// them (runtime/compaction/opencode_compaction.hpp holds the captured text): no temperature.
json opencode_compaction(const json& messages) {
  std::string t = "Here is the conversation so far:\n\n<conversation>\n";
  for (const json& m : messages) {
    const std::string role = m["role"];
    if (role == "user") t += "[User]: " + json(m["content"].get<std::string>()).dump() + "\n\n";
    if (role == "assistant") t += "[Assistant]: " + m["content"].get<std::string>() + "\n\n";
  }
  t += "</conversation>\n\n" + opencode_compaction_instructions();
  return {{"model", "anchorage"},
          {"max_tokens", 12},
          {"messages", json::array({{{"role", "system"}, {"content", opencode_compaction_system_text()}},
                                    {{"role", "user"}, {"content", t}}})}};
}

}  // namespace

TEST_CASE(
    "http: after a quiet spell the compaction is answered from the prewritten summary, never from a stale "
    "one",
    "[http][compaction][worker]") {
  http_server s(
      {"--compaction-idle-s", "2", "--compaction-min-tokens", "1", "--compaction-max-tokens", "16"});
  json messages = first_turn(s);
  messages.push_back({{"role", "user"}, {"content", "Now read main.cpp."}});
  const turn_reply t2 = post_session(s, greedy_turn(messages, 12));
  REQUIRE(t2.x_cache["source"] == "end");
  messages.push_back({{"role", "assistant"}, {"content", t2.message.value("content", "")}});
  const long end_rows = s.get("/v1/cache/stats").body_json()["tiers"]["resident"]["end_anchor"].get<long>();

  // The worker writes the summary once no request came for 2 s.
  const json w = worker_finished(s, 1);
  REQUIRE(w["worker"]["finished"] == 1);
  CHECK(w["worker"]["started"] == 1);
  CHECK(w["prewrites_kept"] == 1);
  const turn_reply c = post_session(s, opencode_compaction(messages));
  INFO(c.x_cache.dump());
  CHECK(c.x_cache["via"] == "prewritten");
  CHECK(c.x_cache["prefilled_tokens"] == 0);
  CHECK(c.x_cache["resumed_at"] == c.usage["prompt_tokens"]);
  CHECK(c.usage["prompt_tokens_details"]["cached_tokens"] == c.usage["prompt_tokens"]);
  CHECK(c.usage["prompt_tokens"].get<long>() > end_rows);
  CHECK(c.usage["completion_tokens"].get<long>() > 0);
  CHECK(c.usage["completion_tokens"].get<long>() <= 12);
  // Streamed as opencode asks for it, the same answer from the same summary.
  json streamed = opencode_compaction(messages);
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  const chat_stream_summary cs =
      check_chat_stream(s.stream("/v1/chat/completions", streamed, {}, session), true);
  CHECK(cs.content == c.message.value("content", ""));
  CHECK(cs.usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"] == c.usage["prompt_tokens"]);
  CHECK(cs.usage_chunk["x_cache"]["via"] == "prewritten");

  // The conversation goes on from its end anchor; the worker left it as it was.
  messages.push_back({{"role", "user"}, {"content", "And the tests?"}});
  const turn_reply t3 = post_session(s, greedy_turn(messages, 8));
  CHECK(t3.x_cache["source"] == "end");
  CHECK(t3.x_cache["resumed_at"] == end_rows);
  messages.push_back({{"role", "assistant"}, {"content", t3.message.value("content", "")}});
  // At once (before another quiet spell), a compaction at the new end: the summary of the old
  // end does not answer it; it is served as the continuation.
  const turn_reply c2 = post_session(s, opencode_compaction(messages));
  INFO(c2.x_cache.dump());
  CHECK(c2.x_cache["via"] == "compaction");
  CHECK(c2.x_cache["prefilled_tokens"].get<long>() > 0);
  const json stats = compaction_json(s);  // c2, the first continuation
  CHECK(stats["prewritten"] == 2);
  CHECK(stats["continuations"] == 1);
  const std::string metrics = s.get("/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("anchorage_compactions_total{served=\"prewritten\"} 2"));
  CHECK_THAT(metrics, Catch::Contains("anchorage_compaction_worker_runs_total{run=\"finished\"}"));
}

namespace {

// A conversation opencode goes on with after its first compaction: its summary as an assistant
// message after "What did we do so far?", then "Continue if you have next steps...", answered,
// then one more turn, answered.
const std::string prior_summary =
    "## Objective\n- list the files in src and read main.cpp\n\n## Next Move\n1. read main.cpp";
const std::string continue_after =
    "Continue if you have next steps, or stop and ask for clarification if you are "
    "unsure how to proceed.";

json compacted_conversation(const http_server& s, const httplib::Headers& h) {
  json messages = json::array({{{"role", "system"}, {"content", filler(system_prompt, 900)}},
                               {{"role", "user"}, {"content", "What did we do so far?"}},
                               {{"role", "assistant"}, {"content", prior_summary}},
                               {{"role", "user"}, {"content", continue_after}}});
  const turn_reply t1 = post_turn(s, greedy_turn(messages, 12), h);
  messages.push_back({{"role", "assistant"}, {"content", t1.message.value("content", "")}});
  messages.push_back({{"role", "user"}, {"content", "Now read main.cpp."}});
  const turn_reply t2 = post_turn(s, greedy_turn(messages, 12), h);
  REQUIRE(t2.x_cache["source"] == "end");
  messages.push_back({{"role", "assistant"}, {"content", t2.message.value("content", "")}});
  return messages;
}

// The repeat compaction's instructions after the block (the words as third parties copied
// opencode's prompt builder; no capture of one exists).
std::string repeat_instructions() {
  return "Here is the summary of the conversation before the <conversation> above:\n\n<prior-summary>\n" +
         prior_summary +
         "\n</prior-summary>\n\nThe <prior-summary> summarizes everything that happened before the "
         "<conversation>. Construct a new summary that combines both. The <prior-summary> is discarded after "
         "this: anything you do not carry into the new summary is lost.\n\n" +
         opencode_compaction_instructions().substr(opencode_compaction_instructions().find("Output exactly"));
}

// opencode's repeat compaction of `messages`: the messages after the summary flattened (the
// system text, "What did we do so far?" and the summary are not), the prior summary after the
// block; its agent's system text, no temperature. `typed`: a user message after the last answer.
json repeat_compaction(const json& messages, const std::string& typed = {}) {
  std::string t = "Here is the conversation so far:\n\n<conversation>\n";
  for (std::size_t i = 3; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string role = m["role"];
    if (role == "user") t += "[User]: " + json(m["content"].get<std::string>()).dump() + "\n\n";
    if (role == "assistant") t += "[Assistant]: " + m["content"].get<std::string>() + "\n\n";
  }
  if (!typed.empty()) t += "[User]: " + json(typed).dump() + "\n\n";
  t += "</conversation>\n\n" + repeat_instructions();
  return {{"model", "anchorage"},
          {"max_tokens", 12},
          {"messages", json::array({{{"role", "system"}, {"content", opencode_compaction_system_text()}},
                                    {{"role", "user"}, {"content", t}}})}};
}

// The continuation's turn as the server renders it (the default template, thinking off).
std::string continuation_turn(const std::string& before = {}) {
  return "<|im_end|>\n" + before + "<|im_start|>user\n" + opencode_compaction_system_text() + "\n\n" +
         repeat_instructions() + "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
}

}  // namespace

TEST_CASE(
    "http: opencode's repeat compaction is served as the continuation, and after a quiet spell from "
    "the prewrite",
    "[http][compaction][worker]") {
  http_server s(
      {"--compaction-idle-s", "2", "--compaction-min-tokens", "1", "--compaction-max-tokens", "16"});
  const json messages = compacted_conversation(s, session);
  const json before = s.get("/v1/cache/stats").body_json()["tiers"];
  const long end_rows = before["resident"]["end_anchor"].get<long>();
  const long finished = before["compaction"]["worker"].value("finished", 0L);

  // The repeat compaction: only the continuation turn is read, the prior summary in it.
  const turn_reply c = post_session(s, repeat_compaction(messages));
  INFO(c.x_cache.dump());
  CHECK(c.x_cache["via"] == "compaction");
  CHECK(c.x_cache["source"] == "end");
  CHECK(c.x_cache["resumed_at"] == end_rows);
  const long turn_tokens = static_cast<long>(count_tokens(continuation_turn()));
  CHECK(c.x_cache["prefilled_tokens"].get<long>() >= turn_tokens - 2);
  CHECK(c.x_cache["prefilled_tokens"].get<long>() <= turn_tokens + 2);
  CHECK(c.usage["prompt_tokens"].get<long>() == end_rows + c.x_cache["prefilled_tokens"].get<long>());
  CHECK(c.usage["prompt_tokens_details"]["cached_tokens"] == end_rows);
  CHECK(compaction_json(s)["continuations"] == 1);

  // After a quiet spell the worker has written the summary of this end for the turn the repeat
  // compaction planned, and the same request (opencode sends it again when it retries) is
  // answered from it.
  const json w = worker_finished(s, finished + 1);
  REQUIRE(w["worker"]["finished"].get<long>() >= finished + 1);
  const turn_reply again = post_session(s, repeat_compaction(messages));
  INFO(again.x_cache.dump());
  CHECK(again.x_cache["via"] == "prewritten");
  CHECK(again.x_cache["prefilled_tokens"] == 0);
  CHECK(again.x_cache["resumed_at"] == again.usage["prompt_tokens"]);
  CHECK(again.usage["prompt_tokens"] == c.usage["prompt_tokens"]);
  CHECK(again.usage["completion_tokens"].get<long>() > 0);

  // The conversation goes on from its end anchor.
  json next = messages;
  next.push_back({{"role", "user"}, {"content", "And the tests?"}});
  const turn_reply t3 = post_session(s, greedy_turn(next, 8));
  CHECK(t3.x_cache["source"] == "end");
  CHECK(t3.x_cache["resumed_at"] == end_rows);
}

TEST_CASE("http: a compaction asked for right after the user typed prefills that message, not the transcript",
          "[http][compaction]") {
  http_server s;
  const json messages = compacted_conversation(s, session);
  const long end_rows = s.get("/v1/cache/stats").body_json()["tiers"]["resident"]["end_anchor"].get<long>();
  const std::string typed = "Also list the tests.";
  const turn_reply c = post_session(s, repeat_compaction(messages, typed));
  INFO(c.x_cache.dump());
  CHECK(c.x_cache["via"] == "compaction");
  CHECK(c.x_cache["resumed_at"] == end_rows);
  // The typed message's user turn, then the instructions' turn.
  const long turn_tokens =
      static_cast<long>(count_tokens(continuation_turn("<|im_start|>user\n" + typed + "<|im_end|>\n")));
  CHECK(c.x_cache["prefilled_tokens"].get<long>() >= turn_tokens - 2);
  CHECK(c.x_cache["prefilled_tokens"].get<long>() <= turn_tokens + 2);
  CHECK(c.x_cache["prefilled_tokens"].get<long>() >
        static_cast<long>(count_tokens(continuation_turn())) + static_cast<long>(count_tokens(typed)) - 2);
  CHECK(compaction_json(s)["continuations"] == 1);
}

TEST_CASE(
    "http: a repeat compaction of another named session, or whose transcript differs in one message, "
    "is served as sent",
    "[http][compaction]") {
  http_server s;
  const json messages = compacted_conversation(s, session);
  SECTION("another session") {
    const httplib::Headers other = {{"x-session-id", "ses_fedcba9876543210"},
                                    {"x-session-affinity", "ses_fedcba9876543210"}};
    const turn_reply c = post_turn(s, repeat_compaction(messages), other);
    CHECK(c.x_cache.value("via", "") != "compaction");
    CHECK(c.x_cache["prefilled_tokens"] == c.usage["prompt_tokens"]);
    CHECK(compaction_json(s)["as_sent"] == 1);
  }
  SECTION("one message differs") {
    json changed = messages;
    changed[5]["content"] = "Now read util.cpp.";
    const turn_reply c = post_session(s, repeat_compaction(changed));
    CHECK(c.x_cache.value("via", "") != "compaction");
    CHECK(c.x_cache["prefilled_tokens"] == c.usage["prompt_tokens"]);
    CHECK(compaction_json(s)["as_sent"] == 1);
  }
  SECTION("the same session and transcript: the continuation (the cases above can fail)") {
    const turn_reply c = post_session(s, repeat_compaction(messages));
    CHECK(c.x_cache["via"] == "compaction");
  }
}
