// Recognising a compaction request (runtime/compaction/compaction_request.hpp): the request opencode
// 1.18.33 sent, every other shape built by hand, and near misses that must not be recognised.
#include "runtime/compaction/compaction_request.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "runtime/api/openai_request.hpp"
#include "tests/support/opencode_compaction.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::string read_capture(const std::string& name) {
  std::ifstream in(std::string(ANCHORAGE_SOURCE_DIR) + "/tests/support/clients/opencode-1.18.33/" + name,
                   std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A captured body through the OpenAI edge, as the server reads it.
completion_request parse_capture(const std::string& name) {
  auto r = parse_request(read_capture(name), request_kind::chat);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message);
  return std::get<completion_request>(std::move(r));
}

std::optional<compaction_request> detect(const completion_request& r) {
  return detect_compaction(r.messages, !r.tools.empty());
}

const std::vector<opencode_turn> turns = {
    {"Open src/main.cpp and fix the build.", "The build fails in main.", "Fixed the include."},
    {"Now run the tests.", "", "All 12 pass."},
    {"Commit it.", "Commit.", "Committed as 1a2b3c."},
};

const std::string main_system =
    "You are opencode, an interactive CLI tool that helps users with software tasks.";
const std::string anchored_system =
    "You are an anchored context summarization assistant for coding sessions. Keep the summary anchored.";

std::vector<std::string> user_texts() {
  std::vector<std::string> out;
  for (const opencode_turn& t : turns) out.push_back(t.user);
  return out;
}

std::vector<chat_message> with_last(std::vector<chat_message> m, const std::string& text) {
  m.push_back(opencode_message("user", text));
  return m;
}

}  // namespace

TEST_CASE("the compaction opencode 1.18.33 sent is recognised as flattened", "[compaction]") {
  const completion_request r = parse_capture("compaction.json");
  REQUIRE(r.tools.empty());
  const auto c = detect(r);
  REQUIRE(c);
  CHECK(c->shape == compaction_shape::flattened);
  CHECK(std::string(compaction_shape_name(c->shape)) == "flattened");
  CHECK(c->system_text == r.messages[0].content);
  CHECK(c->system_text.size() == 630);
  const std::vector<std::string> users = {
      "Hello! Please give me a short overview of what a prompt cache does in an LLM server.",
      "Thanks. Now explain how a prefix cache differs from an exact-state cache.",
      "Can you list three ways a client could break cache reuse between turns?",
      "Finally, summarize the key points in two sentences.",
  };
  CHECK(c->user_lines == users);
  CHECK(c->assistant_lines.size() == 4);
  // The instructions: the text around the transcript, never the transcript itself.
  CHECK(c->instructions.rfind("Here is the conversation so far:\n\nCreate a new anchored summary from", 0) ==
        0);
  CHECK(c->instructions.find("## Relevant Files") != std::string::npos);
  CHECK(c->instructions.find("[User]:") == std::string::npos);
  CHECK(c->instructions.find("</conversation>") == std::string::npos);
  const std::string& text = r.messages[1].content;
  CHECK(c->instructions.size() < text.size() / 2);
}

TEST_CASE("the title request opencode 1.18.33 sent is not a compaction", "[compaction]") {
  const completion_request r = parse_capture("title.json");
  REQUIRE(r.messages.size() == 3);
  CHECK_FALSE(detect(r));
}

TEST_CASE("the test builders write what opencode 1.18.33 wrote", "[compaction]") {
  const std::string captured = parse_capture("compaction.json").messages[1].content;
  CHECK(parse_capture("compaction.json").messages[0].content == opencode_compaction_system);
  const opencode_turn first{
      "Hello! Please give me a short overview of what a prompt cache does in an LLM server.", "", ""};
  const std::string line = opencode_flatten({first}).substr(0, opencode_flatten({first}).find("\n\n"));
  CHECK(captured.find("<conversation>\n" + line + "\n\n[Assistant reasoning]: ") != std::string::npos);
  CHECK(captured.rfind("Here is the conversation so far:\n\n<conversation>\n", 0) == 0);
}

TEST_CASE("a flattened compaction built the way opencode builds it", "[compaction]") {
  SECTION("a first compaction") {
    const auto c = detect_compaction(opencode_flattened_request(turns), false);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::flattened);
    CHECK(c->user_lines == user_texts());
    CHECK(c->assistant_lines ==
          std::vector<std::string>{"Fixed the include.", "All 12 pass.", "Committed as 1a2b3c."});
    CHECK(c->instructions == "Here is the conversation so far:\n\n" + opencode_create_instructions);
  }
  SECTION("an update of an earlier summary, under the anchored system text") {
    auto m = opencode_flattened_request(turns, opencode_update_instructions("## Objective\n- fix the build"));
    m[0].content = anchored_system;
    const auto c = detect_compaction(m, false);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::flattened);
    CHECK(c->system_text == anchored_system);
    CHECK(c->user_lines == user_texts());
    CHECK(c->instructions.find("<previous-summary>\n## Objective\n- fix the build\n</previous-summary>") !=
          std::string::npos);
  }
  SECTION("user texts with quotes, backslashes, new lines and non-ASCII, written as JSON strings") {
    const std::vector<opencode_turn> odd = {
        {"say \"hi\"\nthen C:\\dir\\n\ttab", "", "ok"},
        {"  spaced  ", "", "ok"},
        {"naïve café → 日本", "", "ok"},
    };
    const auto c = detect_compaction(opencode_flattened_request(odd), false);
    REQUIRE(c);
    CHECK(c->user_lines == std::vector<std::string>{odd[0].user, odd[1].user, odd[2].user});
  }
  SECTION("user texts written as they are, over several lines") {
    const std::string text =
        "Here is the conversation so far:\n\n<conversation>\n[User]: first line\nsecond line\n\n"
        "[Assistant]: fine\n[Assistant tool call]: read({\"path\":\"a\"})\n[Tool result]: body\n\n"
        "[User]: \"quoted\" but not JSON\n\n[Assistant]: done\n</conversation>\n\n" +
        opencode_create_instructions;
    const auto c = detect_compaction(
        {opencode_message("system", opencode_compaction_system), opencode_message("user", text)}, false);
    REQUIRE(c);
    CHECK(c->user_lines == std::vector<std::string>{"first line\nsecond line", "\"quoted\" but not JSON"});
    CHECK(c->assistant_lines == std::vector<std::string>{"fine", "done"});
  }
  SECTION("white space before the openers") {
    auto m = opencode_flattened_request(turns);
    m[0].content = "\n  " + m[0].content;
    m[1].content = "\n\n" + m[1].content;
    const auto c = detect_compaction(m, false);
    REQUIRE(c);
    CHECK(c->user_lines == user_texts());
  }
}

TEST_CASE("a flattened compaction is recognised by its structure, not by a phrase", "[compaction]") {
  const auto flattened = opencode_flattened_request(turns);
  SECTION("under another system text") {
    auto m = flattened;
    m[0].content = main_system;
    const auto c = detect_compaction(m, false);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::flattened);
    CHECK(c->system_text == main_system);
  }
  SECTION("asking for something other than an anchored summary") {
    auto m = flattened;
    m[1].content = opencode_flattened_text(turns, "Translate the conversation above into French.");
    const auto c = detect_compaction(m, false);
    REQUIRE(c);
    CHECK(c->instructions ==
          "Here is the conversation so far:\n\nTranslate the conversation above into French.");
  }
  SECTION("another text before the block") {
    auto m = flattened;
    m[1].content = "Look: " + m[1].content;
    const auto c = detect_compaction(m, false);
    REQUIRE(c);
    CHECK(c->user_lines == user_texts());
  }
}

TEST_CASE("an anchored compaction: the instruction opens the user text", "[compaction]") {
  SECTION("the transcript in a block after the instruction") {
    const std::string text =
        opencode_create_instructions + "\n\n<conversation>\n" + opencode_flatten(turns) + "\n</conversation>";
    const auto c = detect_compaction(
        {opencode_message("system", anchored_system), opencode_message("user", text)}, false);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::anchored);
    CHECK(c->user_lines == user_texts());
    CHECK(c->instructions == opencode_create_instructions);
  }
  SECTION("the transcript in an earlier user message, an update after it") {
    const std::string update = opencode_update_instructions("## Objective\n- fix the build");
    const auto c = detect_compaction(
        {opencode_message("system", opencode_compaction_system),
         opencode_message("user", "<conversation>\n" + opencode_flatten(turns) + "\n</conversation>"),
         opencode_message("user", update)},
        false);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::anchored);
    CHECK(c->user_lines == user_texts());
    CHECK(c->instructions == update);
  }
  SECTION("no block: the earlier messages are the history") {
    const auto c = detect_compaction(
        with_last(opencode_history(anchored_system, turns), opencode_create_instructions), false);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::anchored);
    CHECK(c->user_lines == user_texts());
    CHECK(c->assistant_lines.size() == 3);
  }
}

TEST_CASE("a continue prompt after the original messages", "[compaction]") {
  const std::string older_system = "You are a helpful AI assistant tasked with summarizing conversations.";
  const auto c =
      detect_compaction(with_last(opencode_history(older_system, turns), opencode_continue_prompt), false);
  REQUIRE(c);
  CHECK(c->shape == compaction_shape::continue_prompt);
  CHECK(c->system_text == older_system);
  CHECK(c->user_lines == user_texts());
  CHECK(c->assistant_lines ==
        std::vector<std::string>{"Fixed the include.", "All 12 pass.", "Committed as 1a2b3c."});
  CHECK(c->instructions == opencode_continue_prompt);
}

TEST_CASE("a trailing instruction after a normal turn's history", "[compaction]") {
  const auto history = opencode_history(main_system, turns);
  SECTION("tools and a continue prompt") {
    const auto c = detect_compaction(with_last(history, opencode_continue_prompt), true);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::trailing_instruction);
    CHECK(c->user_lines == user_texts());
  }
  SECTION("tools and an anchored instruction") {
    const auto c = detect_compaction(with_last(history, opencode_create_instructions), true);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::trailing_instruction);
    CHECK(c->system_text == main_system);
    CHECK(c->instructions == opencode_create_instructions);
  }
  SECTION("the main system text without tools and an update instruction") {
    const auto c = detect_compaction(with_last(history, opencode_update_instructions("- x")), false);
    REQUIRE(c);
    CHECK(c->shape == compaction_shape::trailing_instruction);
    CHECK(c->user_lines == user_texts());
  }
}

TEST_CASE("near misses are not compaction requests", "[compaction]") {
  const auto flattened = opencode_flattened_request(turns);
  SECTION("a flattened transcript with no system text") {
    CHECK_FALSE(detect_compaction({flattened[1]}, false));
  }
  SECTION("a flattened transcript with tools") { CHECK_FALSE(detect_compaction(flattened, true)); }
  SECTION("a flattened transcript after other messages") {
    auto m = opencode_history(opencode_compaction_system, turns);
    m.push_back(flattened[1]);
    CHECK_FALSE(detect_compaction(m, false));
  }
  SECTION("a flattened transcript with nothing after it") {
    auto m = flattened;
    m[1].content = "Summarise this:\n\n<conversation>\n" + opencode_flatten(turns) + "\n</conversation>\n";
    CHECK_FALSE(detect_compaction(m, false));
  }
  SECTION("the opener with no closed block, or the tag only mentioned mid-line") {
    auto m = flattened;
    m[1].content = "Here is the conversation so far:\n\n<conversation>\n" + opencode_flatten(turns) + "\n\n" +
                   opencode_create_instructions;
    CHECK_FALSE(detect_compaction(m, false));
    m[1].content = "Here is the conversation so far: a <conversation> " + opencode_flatten(turns) +
                   " </conversation>\n\n" + opencode_create_instructions;
    CHECK_FALSE(detect_compaction(m, false));
  }
  SECTION("an opener in another case") {
    // (A flattened transcript is recognised by its structure, whatever the case of its opener.)
    auto m = flattened;
    m[1].content = "CREATE A NEW ANCHORED SUMMARY of the above";
    CHECK_FALSE(detect_compaction(m, false));
  }
  SECTION("a user text that mentions the phrases mid-text") {
    const auto history = opencode_history(main_system, turns);
    CHECK_FALSE(detect_compaction(with_last(history, "Please Create a new anchored summary of this."), true));
    CHECK_FALSE(detect_compaction(
        with_last(history, "Why does opencode send 'Update the anchored summary below'?"), true));
    CHECK_FALSE(detect_compaction(
        with_last(history,
                  "What does \"Provide a detailed prompt for continuing our conversation above.\" do?"),
        false));
  }
  SECTION("an instruction with no history before it") {
    CHECK_FALSE(detect_compaction(
        {opencode_message("system", main_system), opencode_message("user", opencode_continue_prompt)},
        false));
    CHECK_FALSE(detect_compaction(
        {opencode_message("system", main_system), opencode_message("user", opencode_create_instructions)},
        true));
  }
  SECTION("the last message is not the user's") {
    auto m = with_last(opencode_history(main_system, turns), opencode_continue_prompt);
    m.push_back(opencode_message("assistant", "## Goal"));
    CHECK_FALSE(detect_compaction(m, false));
  }
  SECTION("an ordinary turn and an empty request") {
    CHECK_FALSE(detect_compaction(with_last(opencode_history(main_system, turns), "And now push it."), true));
    CHECK_FALSE(detect_compaction({}, false));
  }
}
