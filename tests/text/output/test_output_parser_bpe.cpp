// The output parser with a BPE tokenizer: the markers are the tokenizer's ids, token bytes are
// decoded through utf8_stream (a character split across tokens goes out whole, invalid bytes
// become one U+FFFD per maximal subpart).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/text/output/output_parser.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "runtime/text/tokenizer/utf8_stream.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

const std::string fffd = "\xEF\xBF\xBD";

struct fed {
  std::vector<std::string> texts;  // every delta's text, in order
  assistant_output result;
};

fed feed_all(output_parser& p, const std::vector<token_id>& ids) {
  fed f;
  const auto take = [&](const std::vector<output_delta>& ds) {
    for (const auto& d : ds)
      if (d.what != output_delta::kind::tool_call) f.texts.push_back(d.text);
  };
  for (token_id t : ids) take(p.feed(t));
  take(p.finish());
  f.result = p.result();
  return f;
}

const tokenizer& tiny() {
  static const tokenizer tok = tokenizer::from_json_file(bpe_fixture("tiny_qwen3.json"));
  return tok;
}

bool valid_utf8(const std::string& s) { return valid_utf8_prefix(s) == s.size(); }

}  // namespace

TEST_CASE("bpe output: reasoning and content split at the tokenizer's own think ids", "[openai][bpe]") {
  const tokenizer& tok = tiny();
  REQUIRE(tok.ids().think_open != special_tokens::think_open);  // ids the byte tokenizer does not share
  output_parser p(true, false, /*starts_in_reasoning=*/false, tok);
  const fed f = feed_all(p, tok.encode("<think>\nplan it\n</think>\n\nthe answer<|im_end|>", true));
  CHECK(f.result.reasoning == "plan it");
  CHECK(f.result.content == "the answer");

  output_parser plain(false, false, false, tok);
  const fed g = feed_all(plain, tok.encode("<think>x</think>y<|endoftext|>", true));
  CHECK(g.result.content == "<think>x</think>y");
}

TEST_CASE("bpe output: a character split across tokens goes out whole in one delta", "[openai][bpe]") {
  const tokenizer& tok = tiny();
  const std::string text = "h\xC3\xA9llo \xE2\x82\xAC and \xF0\x9F\x98\x80!";
  const std::vector<token_id> ids = tok.encode(text, false);
  bool split = false;  // some token ends inside a character: the case under test
  for (token_id t : ids) split = split || !valid_utf8(tok.token_text(t));
  REQUIRE(split);
  output_parser p(false, false, false, tok);
  std::string joined;
  for (token_id t : ids) {
    for (const auto& d : p.feed(t)) {
      INFO("delta " << d.text.size() << " bytes");
      CHECK(valid_utf8(d.text));
      CHECK(d.text.find(fffd) == std::string::npos);
      joined += d.text;
    }
  }
  for (const auto& d : p.finish()) joined += d.text;
  CHECK(joined == text);
  CHECK(p.result().content == text);
}

TEST_CASE("bpe output: invalid bytes are one U+FFFD per maximal subpart", "[openai][bpe]") {
  // The fixture's byte b is id b: these ids are the bytes themselves, for either tokenizer.
  const std::vector<token_id> ids = {'a', 0xE2, 0x82, 'x', 0xC0, 0xAF, 0xF0, 0x9F, 'y', 0xE2};
  output_parser bpe(false, false, false, tiny());
  const fed f = feed_all(bpe, ids);
  CHECK(f.result.content == "a" + fffd + "x" + fffd + fffd + fffd + "y" + fffd);
  CHECK(f.result.content == utf8_lossy("a\xE2\x82x\xC0\xAF\xF0\x9Fy\xE2"));
  // The byte tokenizer keeps its rule: one U+FFFD per byte of a broken sequence.
  output_parser byte(false, false);
  const fed b = feed_all(byte, ids);
  CHECK(b.result.content == "a" + fffd + fffd + "x" + fffd + fffd + fffd + fffd + "y" + fffd);
  // A special token interrupting a sequence ends it.
  output_parser cut(true, false, false, tiny());
  const fed c = feed_all(cut, {0xE2, 0x82, tiny().ids().think_open, 'z'});
  CHECK(c.result.content == fffd + "z");
}

TEST_CASE("bpe output: undefined ids and other added tokens produce nothing", "[openai][bpe]") {
  const tokenizer& tok = tiny();
  output_parser p(false, false, false, tok);
  const fed f = feed_all(p, {'a', 280, 305, -1, tok.ids().endoftext, tok.ids().im_start, 'b'});
  CHECK(f.result.content == "ab");
}

TEST_CASE("bpe output: Qwen3's tool calls and multi-byte text", "[openai][bpe]") {
  QWEN3_TOKENIZER_OR_SKIP(tok);
  const std::string text =
      "Sure \xE2\x80\x94 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Z\xC3\xBCrich\"}}\n</tool_call>";
  const std::vector<token_id> ids = tok.encode(text, true);
  output_parser p(false, true, false, tok);
  const fed f = feed_all(p, ids);
  for (const auto& t : f.texts) CHECK(valid_utf8(t));
  CHECK(f.result.content == "Sure \xE2\x80\x94 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80");
  REQUIRE(f.result.tool_calls.size() == 1);
  CHECK(f.result.tool_calls[0].name == "get_weather");
  CHECK(f.result.tool_calls[0].arguments == "{\"city\":\"Z\xC3\xBCrich\"}");
}
