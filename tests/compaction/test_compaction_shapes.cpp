// Compaction shapes by structure (docs/COMPACTION.md, issue 24 item 3): opencode's repeat
// compaction (the earlier summary in a <prior-summary> block after the transcript), Claude Code's
// compaction request (its own messages, then a summary instruction), and a client history that
// holds one more user message than the held conversation. Each with its near misses; the plan's
// continuation turn, and the guard over a held record (runtime/compaction/compaction_plan.hpp).
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "runtime/compaction/compaction_plan.hpp"
#include "runtime/compaction/compaction_request.hpp"
#include "tests/support/opencode_compaction.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

const std::vector<opencode_turn> turns = {
    {"Open src/main.cpp and fix the build.", "The build fails in main.", "Fixed the include."},
    {"Now run the tests.", "", "All 12 pass."},
    {"Commit it.", "", "Committed as 1a2b3c."},
};

const std::string prior = "## Objective\n- fix the build of src/main.cpp\n\n## Next Move\n1. run the tests";
const std::string main_system =
    "You are opencode, an interactive CLI tool that helps users with software tasks.";

std::vector<std::string> user_texts(const std::vector<opencode_turn>& ts = turns) {
  std::vector<std::string> out;
  for (const opencode_turn& t : ts) out.push_back(t.user);
  return out;
}

// The held conversation's text as the server renders it (ChatML), each answer after its user turn.
std::string record_of(const std::vector<opencode_turn>& ts) {
  std::string out = "<|im_start|>system\n" + main_system + "<|im_end|>\n";
  for (const opencode_turn& t : ts) {
    out += "<|im_start|>user\n" + t.user + "<|im_end|>\n<|im_start|>assistant\n" + t.answer + "<|im_end|>\n";
  }
  return out;
}

// A repeat compaction's user text: the transcript, then the prior summary and the combine request.
std::string repeat_text(const std::vector<opencode_turn>& ts = turns, const std::string& summary = prior) {
  return opencode_flattened_text(ts, opencode_repeat_instructions(summary));
}

std::vector<chat_message> repeat_request(const std::string& text = repeat_text()) {
  return {opencode_message("system", opencode_compaction_system), opencode_message("user", text)};
}

completion_request chat_request(std::vector<chat_message> messages) {
  completion_request r;
  r.kind = request_kind::chat;
  r.messages = std::move(messages);
  return r;
}

std::string decoded(const tokenizer& tok, const std::vector<std::int32_t>& ids) {
  return tok.decode(std::vector<token_id>(ids.begin(), ids.end()));
}

std::vector<token_id> rows_of(const tokenizer& tok, const std::string& text) {
  return tok.encode(text, true);
}

// Where each of `parts` first occurs in `text`, in order; fails when one is missing or out of order.
void check_in_order(const std::string& text, const std::vector<std::string>& parts) {
  std::size_t pos = 0;
  for (const std::string& p : parts) {
    INFO(p);
    const std::size_t at = text.find(p, pos);
    REQUIRE(at != std::string::npos);
    pos = at + p.size();
  }
}

const std::string claude_instruction =
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the "
    "user's explicit requests and your previous actions.\n\nYour summary should include <analysis> and "
    "<summary> sections.";

}  // namespace

TEST_CASE("opencode's repeat compaction is recognised by its structure", "[compaction][shapes]") {
  const auto c = detect_compaction(repeat_request(), false);
  REQUIRE(c);
  CHECK(c->shape == compaction_shape::flattened);
  CHECK(c->system_text == opencode_compaction_system);
  CHECK(c->user_lines == user_texts());
  CHECK(c->assistant_lines ==
        std::vector<std::string>{"Fixed the include.", "All 12 pass.", "Committed as 1a2b3c."});
  CHECK(c->prior_summary == prior);
  CHECK_FALSE(c->last_user_pending);
  // The instructions keep the prior summary where the client put it, the transcript cut out.
  CHECK(c->instructions == "Here is the conversation so far:\n\n" + opencode_repeat_instructions(prior));
  CHECK(c->instructions.find("[User]:") == std::string::npos);

  SECTION("no phrase is needed: another system text, other instructions") {
    auto m = repeat_request();
    m[0].content = "You summarise coding sessions.";
    m[1].content = "<conversation>\n" + opencode_flatten(turns) + "\n</conversation>\n\n<prior-summary>\n" +
                   prior + "\n</prior-summary>\n\nMerge the two into one summary.";
    const auto d = detect_compaction(m, false);
    REQUIRE(d);
    CHECK(d->shape == compaction_shape::flattened);
    CHECK(d->prior_summary == prior);
    CHECK(d->instructions ==
          "<prior-summary>\n" + prior + "\n</prior-summary>\n\nMerge the two into one summary.");
  }
  SECTION("a first compaction without the anchored-summary phrase") {
    auto m =
        repeat_request(opencode_flattened_text(turns, "Summarise the conversation above in five bullets."));
    const auto d = detect_compaction(m, false);
    REQUIRE(d);
    CHECK(d->shape == compaction_shape::flattened);
    CHECK(d->prior_summary.empty());
  }
}

TEST_CASE("near misses of the repeat compaction are not compaction requests", "[compaction][shapes]") {
  const std::string flat = opencode_flatten(turns);
  const std::string block = "<conversation>\n" + flat + "\n</conversation>";
  const std::string prior_block = "<prior-summary>\n" + prior + "\n</prior-summary>";
  auto with_text = [](const std::string& text) { return detect_compaction(repeat_request(text), false); };
  REQUIRE(
      with_text("Here is the conversation so far:\n\n" + block + "\n\n" + prior_block + "\n\nCombine both."));

  SECTION("the prior-summary block before the conversation block") {
    CHECK_FALSE(
        with_text(prior_block + "\n\nHere is the conversation so far:\n\n" + block + "\n\nCombine both."));
  }
  SECTION("a prior-summary block inside the conversation block") {
    CHECK_FALSE(
        with_text("<conversation>\n" + flat + "\n" + prior_block + "\n</conversation>\n\nCombine both."));
  }
  SECTION("the prior-summary block not closed") {
    CHECK_FALSE(with_text(block + "\n\n<prior-summary>\n" + prior + "\n\nCombine both."));
    // The closing tag only mentioned mid-line does not close it.
    CHECK_FALSE(with_text(block + "\n\n<prior-summary>\n" + prior + " </prior-summary>\n\nCombine both."));
  }
  SECTION("the conversation block not closed") {
    CHECK_FALSE(with_text("<conversation>\n" + flat + "\n\n" + prior_block + "\n\nCombine both."));
  }
  SECTION("two prior summaries, or two conversation blocks") {
    CHECK_FALSE(with_text(block + "\n\n" + prior_block + "\n\n" + prior_block + "\n\nCombine both."));
    CHECK_FALSE(with_text(block + "\n\n" + block + "\n\n" + prior_block + "\n\nCombine both."));
  }
  SECTION("no instructions after the blocks") {
    CHECK_FALSE(with_text("Combine both.\n\n" + block + "\n\n" + prior_block));
    CHECK_FALSE(with_text("Combine both.\n\n" + block + "\n  \n"));
  }
  SECTION("a block with no user entry") {
    CHECK_FALSE(with_text("<conversation>\n[Assistant]: hello\n</conversation>\n\n" + prior_block +
                          "\n\nCombine both."));
    CHECK_FALSE(with_text("<conversation>\nUser: hello\n</conversation>\n\nCombine both."));
  }
  SECTION("tools, no system text, other messages before it") {
    const std::string text = repeat_text();
    CHECK_FALSE(detect_compaction(repeat_request(text), true));
    CHECK_FALSE(detect_compaction({opencode_message("user", text)}, false));
    auto m = opencode_history(opencode_compaction_system, turns);
    m.push_back(opencode_message("user", text));
    CHECK_FALSE(detect_compaction(m, false));
  }
}

TEST_CASE("the repeat compaction's continuation holds the prior summary and the instructions in order",
          "[compaction][shapes]") {
  const tokenizer tok;
  const chat_renderer renderer =
      GENERATE(chat_renderer::builtin, chat_renderer::qwen35, chat_renderer::qwen3);
  INFO(chat_renderer_name(renderer));
  const auto p = plan_compaction(chat_request(repeat_request()), renderer, tok);
  REQUIRE(p);
  CHECK(p->shape == "flattened");
  CHECK(p->user_lines == user_texts());
  CHECK(p->turn_after_pending.empty());
  const std::string text = decoded(tok, p->turn);
  CHECK(text.rfind("<|im_end|>\n<|im_start|>user\n" + opencode_compaction_system, 0) == 0);
  check_in_order(text, {"You are a context summarization agent.",
                        "Here is the summary of the conversation before the <conversation> above:",
                        "<prior-summary>\n" + prior + "\n</prior-summary>",
                        "Construct a new summary that combines both.", "<template>\n## Objective"});
  CHECK(text.find("[User]:") == std::string::npos);
  CHECK(text.find("Here is the conversation so far:") == std::string::npos);
  // The first compaction's turn is another (the prior summary is in this one only).
  const auto first = plan_compaction(chat_request(opencode_flattened_request(turns)), renderer, tok);
  REQUIRE(first);
  CHECK(first->turn != p->turn);
  CHECK(decoded(tok, first->turn).find("<prior-summary>") == std::string::npos);
}

TEST_CASE("the guard over the held record: every user line in order, the last in its last user turn",
          "[compaction][shapes]") {
  const tokenizer tok;
  const auto p = plan_compaction(chat_request(repeat_request()), chat_renderer::qwen35, tok);
  REQUIRE(p);
  const std::string record = record_of(turns);
  const auto turn = compaction_continuation(*p, tok, rows_of(tok, record));
  REQUIRE(turn);
  CHECK(*turn == std::vector<token_id>(p->turn.begin(), p->turn.end()));

  SECTION("a transcript that differs from the held conversation in one message") {
    auto other = turns;
    other[1].user = "Now run the linter.";
    CHECK_FALSE(compaction_continuation(*p, tok, rows_of(tok, record_of(other))));
    CHECK(compaction_guard_check(user_texts(), record_of(other)) == guard_result::fails);
  }
  SECTION("the user lines out of order") {
    auto other = turns;
    std::swap(other[0].user, other[1].user);
    CHECK_FALSE(compaction_continuation(*p, tok, rows_of(tok, record_of(other))));
  }
  SECTION("the record is ahead of the client: a turn the client does not have") {
    auto ahead = turns;
    ahead.push_back({"Push it.", "", "Pushed."});
    CHECK(compaction_guard_check(user_texts(), record_of(ahead)) == guard_result::fails);
    CHECK_FALSE(compaction_continuation(*p, tok, rows_of(tok, record_of(ahead))));
  }
  SECTION("tool responses after the last user turn do not count as user turns") {
    std::string with_tools = record_of(turns);
    with_tools +=
        "<|im_start|>assistant\n<tool_call>\n{\"name\":\"bash\"}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\nDone.<|im_end|>\n";
    CHECK(compaction_guard_check(user_texts(), with_tools) == guard_result::holds);
  }
  SECTION("the record is behind the client, the client's last turn answered: no continuation") {
    const std::vector<opencode_turn> behind(turns.begin(), turns.begin() + 2);
    CHECK(compaction_guard_check(user_texts(), record_of(behind)) == guard_result::holds_but_last);
    CHECK_FALSE(compaction_continuation(*p, tok, rows_of(tok, record_of(behind))));
  }
}

TEST_CASE("a compaction request of another named session is not this conversation's",
          "[compaction][shapes]") {
  CHECK(compaction_session_fits("header:ses_a", "header:ses_a"));
  CHECK_FALSE(compaction_session_fits("header:ses_b", "header:ses_a"));
  // A key the server derived names no session the client chose.
  CHECK(compaction_session_fits("c0123456789abcdef", "header:ses_a"));
  CHECK(compaction_session_fits("header:ses_b", "h0123456789abcdef"));
  CHECK(compaction_session_fits("", ""));
}

TEST_CASE("Claude Code's compaction request: its own messages and a summary instruction",
          "[compaction][shapes]") {
  const auto history = opencode_history(main_system, turns);
  auto with_last = [](std::vector<chat_message> m, const std::string& text) {
    m.push_back(opencode_message("user", text));
    return m;
  };
  SECTION("no tools: a continuation") {
    const auto c = detect_compaction(with_last(history, claude_instruction), false);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::claude_code);
    CHECK(std::string(compaction_shape_name(c->shape)) == "claude_code");
    CHECK(c->user_lines == user_texts());
    CHECK(c->instructions == claude_instruction);
    CHECK_FALSE(c->last_user_pending);
    const tokenizer tok;
    const auto p =
        plan_compaction(chat_request(with_last(history, claude_instruction)), chat_renderer::qwen35, tok);
    REQUIRE(p);
    CHECK(p->shape == "claude_code");
    const std::string text = decoded(tok, p->turn);
    check_in_order(
        text, {"<|im_end|>\n<|im_start|>user\n", main_system, "Your task is to create a detailed summary"});
    CHECK(compaction_continuation(*p, tok, rows_of(tok, record_of(turns))));
  }
  SECTION("after its text-only preamble") {
    const std::string text =
        "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n" + claude_instruction;
    const auto c = detect_compaction(with_last(history, text), false);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::claude_code);
  }
  SECTION("with tools: the history sent again, served as sent") {
    const auto c = detect_compaction(with_last(history, claude_instruction), true);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::trailing_instruction);
  }
  SECTION("near misses") {
    // The instruction mid-text, after the preamble but not at a line start, in another case.
    CHECK_FALSE(detect_compaction(with_last(history, "Why does it say: " + claude_instruction), false));
    CHECK_FALSE(detect_compaction(
        with_last(history, "CRITICAL: Respond with TEXT ONLY. " + claude_instruction), false));
    CHECK_FALSE(
        detect_compaction(with_last(history, "your task is to create a detailed summary of it"), false));
    // No history before it.
    CHECK_FALSE(detect_compaction(
        {opencode_message("system", main_system), opencode_message("user", claude_instruction)}, false));
    // Not the last message.
    auto m = with_last(history, claude_instruction);
    m.push_back(opencode_message("assistant", "<analysis>"));
    CHECK_FALSE(detect_compaction(m, false));
  }
}

TEST_CASE("one more user message than the held conversation is prefilled before the instructions",
          "[compaction][shapes]") {
  const tokenizer tok;
  const std::string typed = "Also bump the version to 2.1.";
  // The client's history: the turns, then the message the user just typed, unanswered.
  std::string flat = opencode_flatten(turns) + "\n\n[User]: " + nlohmann::json(typed).dump();
  const std::string text = "Here is the conversation so far:\n\n<conversation>\n" + flat +
                           "\n</conversation>\n\n" + opencode_repeat_instructions(prior);
  const completion_request r = chat_request(repeat_request(text));
  const auto c = detect_compaction(r.messages, false);
  REQUIRE(c);
  CHECK(c->last_user_pending);
  CHECK(c->user_lines.back() == typed);
  const auto p = plan_compaction(r, chat_renderer::qwen35, tok);
  REQUIRE(p);
  REQUIRE_FALSE(p->turn_after_pending.empty());
  const std::string pending = decoded(tok, p->turn_after_pending);
  CHECK(pending.rfind("<|im_end|>\n<|im_start|>user\n" + typed + "<|im_end|>\n<|im_start|>user\n" +
                          opencode_compaction_system,
                      0) == 0);
  check_in_order(pending, {typed, "<prior-summary>\n" + prior, "Construct a new summary"});
  // The plain turn is the pending turn without the typed message's turn.
  const std::string plain = decoded(tok, p->turn);
  CHECK(plain.find(typed) == std::string::npos);
  CHECK(pending.substr(pending.find("<|im_start|>user\n" + opencode_compaction_system)) ==
        plain.substr(plain.find("<|im_start|>user\n")));

  SECTION("the held conversation ends with the answer to the message before: the typed one is prefilled") {
    const auto turn = compaction_continuation(*p, tok, rows_of(tok, record_of(turns)));
    REQUIRE(turn);
    CHECK(*turn == std::vector<token_id>(p->turn_after_pending.begin(), p->turn_after_pending.end()));
  }
  SECTION("the held conversation already answered it: the plain turn") {
    auto answered = turns;
    answered.push_back({typed, "", "Bumped."});
    const auto turn = compaction_continuation(*p, tok, rows_of(tok, record_of(answered)));
    REQUIRE(turn);
    CHECK(*turn == std::vector<token_id>(p->turn.begin(), p->turn.end()));
  }
  SECTION("the held conversation is two messages behind: as sent") {
    const std::vector<opencode_turn> behind(turns.begin(), turns.begin() + 2);
    CHECK_FALSE(compaction_continuation(*p, tok, rows_of(tok, record_of(behind))));
  }
  SECTION("the held conversation differs in an earlier message: as sent") {
    auto other = turns;
    other[0].user = "Open src/other.cpp instead.";
    CHECK_FALSE(compaction_continuation(*p, tok, rows_of(tok, record_of(other))));
  }
  SECTION("the held conversation went on past the message before: as sent") {
    auto ahead = turns;
    ahead.push_back({"Push it.", "", "Pushed."});
    CHECK_FALSE(compaction_continuation(*p, tok, rows_of(tok, record_of(ahead))));
  }
  SECTION("messages, not a transcript: a continue prompt after an unanswered user message") {
    auto m = opencode_history("You are a helpful AI assistant tasked with summarizing conversations.", turns);
    m.push_back(opencode_message("user", typed));
    m.push_back(opencode_message("user", opencode_continue_prompt));
    const auto d = detect_compaction(m, false);
    REQUIRE(d);
    CHECK(d->shape == compaction_shape::continue_prompt);
    CHECK(d->last_user_pending);
    const auto q = plan_compaction(chat_request(m), chat_renderer::qwen35, tok);
    REQUIRE(q);
    REQUIRE_FALSE(q->turn_after_pending.empty());
    const auto turn = compaction_continuation(*q, tok, rows_of(tok, record_of(turns)));
    REQUIRE(turn);
    CHECK(decoded(tok, std::vector<std::int32_t>(turn->begin(), turn->end())).find(typed) !=
          std::string::npos);
  }
  SECTION("a single user line, unanswered: nothing ties it to the record") {
    const std::string one =
        "Here is the conversation so far:\n\n<conversation>\n[User]: " + nlohmann::json(typed).dump() +
        "\n</conversation>\n\nSummarise it.";
    const auto q = plan_compaction(chat_request(repeat_request(one)), chat_renderer::qwen35, tok);
    REQUIRE(q);
    CHECK(q->turn_after_pending.empty());
    CHECK_FALSE(compaction_continuation(*q, tok, rows_of(tok, record_of(turns))));
  }
}
