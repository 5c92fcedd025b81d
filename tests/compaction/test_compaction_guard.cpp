// The compaction guard (runtime/compaction/compaction_request.hpp): every user line of the client's
// history must be in the held record's text, in order (tests/compaction/test_compaction_shapes.cpp has
// the rest of its cases). And the transcript reader under it
// (runtime/compaction/compaction_transcript.hpp).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "runtime/compaction/compaction_request.hpp"
#include "runtime/compaction/compaction_transcript.hpp"
#include "tests/support/opencode_compaction.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

compaction_request with_users(std::vector<std::string> users) {
  compaction_request r;
  r.user_lines = std::move(users);
  return r;
}

// A held record's text: the turns as a Qwen-style template renders them.
std::string record_of(const std::vector<opencode_turn>& turns) {
  std::string out = "<|im_start|>system\nYou are opencode.<|im_end|>\n";
  for (const opencode_turn& t : turns) {
    out += "<|im_start|>user\n" + t.user + "<|im_end|>\n<|im_start|>assistant\n" + t.answer + "<|im_end|>\n";
  }
  return out;
}

const std::vector<opencode_turn> turns = {
    {"Open src/main.cpp and fix the build.", "", "Fixed."},
    {"Now run the tests.", "", "All pass."},
    {"Commit it.", "", "Committed."},
};

}  // namespace

TEST_CASE("the guard holds when every user line is in the record, in order", "[compaction]") {
  const std::string record = record_of(turns);
  const auto c = detect_compaction(opencode_flattened_request(turns), false);
  REQUIRE(c);
  CHECK(compaction_guard(*c, record));

  SECTION("the first line missing") {
    auto other = turns;
    other[0].user = "Open src/other.cpp instead.";
    CHECK_FALSE(compaction_guard(*c, record_of(other)));
  }
  SECTION("the last line missing: the record is behind the client") {
    const std::vector<opencode_turn> behind(turns.begin(), turns.begin() + 2);
    CHECK_FALSE(compaction_guard(*c, record_of(behind)));
  }
  SECTION("a middle line missing: the transcript differs from the held conversation") {
    auto other = turns;
    other[1].user = "Something else.";
    CHECK_FALSE(compaction_guard(*c, record_of(other)));
  }
  SECTION("only leading and trailing white space of the lines is ignored") {
    CHECK(
        compaction_guard(with_users({"  Open src/main.cpp and fix the build.\n", "\tCommit it. "}), record));
    CHECK_FALSE(
        compaction_guard(with_users({"Open src/main.cpp  and fix the build.", "Commit it."}), record));
    CHECK_FALSE(compaction_guard(with_users({"open src/main.cpp and fix the build.", "Commit it."}), record));
  }
}

TEST_CASE("the guard compares the decoded text of lines written with JSON escapes", "[compaction]") {
  const std::vector<opencode_turn> odd = {
      {"say \"hi\"\nthen run C:\\tools\\x.exe", "", "ok"},
      {"multi\nline\n\"end\"", "", "ok"},
  };
  const auto c = detect_compaction(opencode_flattened_request(odd), false);
  REQUIRE(c);
  CHECK(compaction_guard(*c, record_of(odd)));
  // A record holding the escaped spelling is not the user's text.
  const std::string escaped = "say \\\"hi\\\"\\nthen run C:\\\\tools\\\\x.exe multi\\nline\\n\\\"end\\\"";
  CHECK_FALSE(compaction_guard(*c, escaped));
}

TEST_CASE("the guard refuses an empty history or an empty line", "[compaction]") {
  const std::string record = record_of(turns);
  CHECK_FALSE(compaction_guard(with_users({}), record));
  CHECK_FALSE(compaction_guard(with_users({"", "Commit it."}), record));
  CHECK_FALSE(compaction_guard(with_users({"Open src/main.cpp and fix the build.", " \n\t"}), record));
  CHECK_FALSE(compaction_guard(with_users({"Commit it."}), ""));
  // One line is both the first and the last.
  CHECK(compaction_guard(with_users({"Commit it."}), record));
}

TEST_CASE("the transcript reader: blocks, the text around them, entries", "[compaction]") {
  namespace ct = compaction_transcript;
  const std::string text =
      "before\n<conversation>\none\n</conversation>\nmiddle <conversation> not a tag\n"
      "<conversation>\ntwo\n</conversation>\n\n after ";
  const auto blocks = ct::find_blocks(text);
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[0].body == "\none\n");
  CHECK(blocks[1].body == "\ntwo\n");
  CHECK(ct::cut_blocks(text, blocks) == "before\n\nmiddle <conversation> not a tag\n\nafter");
  CHECK(ct::find_blocks("<conversation>\nnever closed").empty());

  const auto entries = ct::read_entries(
      "noise\n[User]: \"a\"\n\n[Assistant reasoning]: r\n[Assistant]: x\n"
      "[not a label]: y\n[User]:\n[Tool result]: z");
  REQUIRE(entries.size() == 5);
  CHECK(entries[0].label == "User");
  CHECK(entries[0].text == "\"a\"\n");
  CHECK(entries[1].label == "Assistant reasoning");
  CHECK(entries[2].text == "x\n[not a label]: y");
  CHECK(entries[3].text.empty());
  CHECK(entries[4].label == "Tool result");

  CHECK(ct::user_text(" \"a\\\"b\\nc\\u00e9\" ") == "a\"b\nc\xc3\xa9");
  CHECK(ct::user_text("\"not\" JSON") == "\"not\" JSON");
  CHECK(ct::user_text("\"unterminated \\\"") == "\"unterminated \\\"");
}
