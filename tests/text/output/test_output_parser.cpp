#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/text/output/output_parser.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace anchorage;

namespace {

struct run_result {
  std::vector<output_delta> deltas;
  assistant_output result;
  std::string reasoning;  // concatenated reasoning deltas
  std::string content;    // concatenated content deltas
  std::vector<tool_call> calls;
};

run_result run(output_parser& p, const std::vector<token_id>& ids) {
  run_result r;
  auto take = [&r](std::vector<output_delta> ds) {
    for (output_delta& d : ds) {
      if (d.what == output_delta::kind::reasoning) r.reasoning += d.text;
      if (d.what == output_delta::kind::content) r.content += d.text;
      if (d.what == output_delta::kind::tool_call) {
        CHECK(d.index == static_cast<int>(r.calls.size()));
        r.calls.push_back(d.call);
      }
      r.deltas.push_back(std::move(d));
    }
  };
  for (token_id t : ids) take(p.feed(t));
  take(p.finish());
  r.result = p.result();
  // The invariant: deltas concatenate to result().
  CHECK(r.reasoning == r.result.reasoning);
  CHECK(r.content == r.result.content);
  REQUIRE(r.calls.size() == r.result.tool_calls.size());
  for (std::size_t i = 0; i < r.calls.size(); ++i) {
    CHECK(r.calls[i].id == r.result.tool_calls[i].id);
    CHECK(r.calls[i].name == r.result.tool_calls[i].name);
    CHECK(r.calls[i].arguments == r.result.tool_calls[i].arguments);
  }
  return r;
}

run_result run(bool reasoning, bool tools, const std::string& text) {
  output_parser p(reasoning, tools);
  return run(p, tokenizer().encode(text, /*parse_special=*/true));
}

std::vector<token_id> bytes(const std::string& s) { return tokenizer().encode(s, false); }

const std::string fffd = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("reasoning is split from content and trimmed", "[openai]") {
  const run_result r =
      run(true, true, "\n<think>\nLet me think.\n\nStill thinking.\n</think>\n\nThe answer is 4.<|im_end|>");
  CHECK(r.result.reasoning == "Let me think.\n\nStill thinking.");
  CHECK(r.result.content == "The answer is 4.");
  CHECK(r.result.tool_calls.empty());
}

TEST_CASE("reasoning deltas stream before the block closes", "[openai]") {
  output_parser p(true, false);
  const tokenizer tok;
  for (token_id t : tok.encode("<think>\nab", true)) p.feed(t);
  CHECK(p.result().reasoning == "ab");
  const std::vector<output_delta> d = p.feed('\n');  // a trailing newline is held...
  CHECK(d.empty());
  const std::vector<output_delta> d2 = p.feed('c');  // ...until more reasoning follows
  REQUIRE(d2.size() == 1);
  CHECK(d2[0].what == output_delta::kind::reasoning);
  CHECK(d2[0].text == "\nc");
}

TEST_CASE("without parse_reasoning think tags are content", "[openai]") {
  const run_result r = run(false, false, "<think>x</think>y<|endoftext|>");
  CHECK(r.result.reasoning.empty());
  CHECK(r.result.content == "<think>x</think>y");
}

TEST_CASE("think not first is not reasoning, stray </think> is dropped", "[openai]") {
  run_result r = run(true, false, "Hi <think>x</think> there");
  CHECK(r.result.reasoning.empty());
  CHECK(r.result.content == "Hi x there");
  r = run(true, false, "pre-opened\n</think>\n\nanswer");
  CHECK(r.result.reasoning.empty());
  CHECK(r.result.content == "pre-opened\n\n\nanswer");
}

TEST_CASE("starts_in_reasoning handles a pre-opened think block", "[openai]") {
  output_parser p(true, false, /*starts_in_reasoning=*/true);
  const run_result r = run(p, tokenizer().encode("\nplan\n</think>\n\nanswer", true));
  CHECK(r.result.reasoning == "plan");
  CHECK(r.result.content == "answer");
}

TEST_CASE("unterminated reasoning stays reasoning", "[openai]") {
  const run_result r = run(true, true, "<think>\nhalf a thought\n\n");
  CHECK(r.result.reasoning == "half a thought");
  CHECK(r.result.content.empty());
}

TEST_CASE("tool calls are extracted", "[openai]") {
  const run_result r =
      run(true, true,
          "<think>\nNeed files.\n</think>\n\nLet me look.\n<tool_call>\n"
          "{\"name\": \"list\", \"arguments\": {\"path\": \".\", \"depth\": 2}}\n</tool_call>\n"
          "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"caf\xC3\xA9.md\"}}\n"
          "</tool_call><|im_end|>");
  CHECK(r.result.reasoning == "Need files.");
  CHECK(r.result.content == "Let me look.");
  REQUIRE(r.result.tool_calls.size() == 2);
  CHECK(r.result.tool_calls[0].id == "call_0");
  CHECK(r.result.tool_calls[0].name == "list");
  CHECK(r.result.tool_calls[0].arguments == "{\"depth\":2,\"path\":\".\"}");
  CHECK(r.result.tool_calls[1].id == "call_1");
  CHECK(r.result.tool_calls[1].name == "read");
  CHECK(r.result.tool_calls[1].arguments == "{\"path\":\"caf\xC3\xA9.md\"}");
  // One delta per call, carrying the whole call.
  int call_deltas = 0;
  for (const output_delta& d : r.deltas) call_deltas += d.what == output_delta::kind::tool_call;
  CHECK(call_deltas == 2);
}

TEST_CASE("tool-call arguments given as a string or absent", "[openai]") {
  const run_result r = run(false, true,
                           "<tool_call>{\"name\":\"a\",\"arguments\":\"{\\\"x\\\": 1}\"}</tool_call>"
                           "<tool_call>{\"name\":\"b\"}</tool_call>");
  REQUIRE(r.result.tool_calls.size() == 2);
  CHECK(r.result.tool_calls[0].arguments == "{\"x\":1}");
  CHECK(r.result.tool_calls[1].arguments == "{}");
  CHECK(r.result.content.empty());
}

TEST_CASE("invalid tool-call JSON falls back to content", "[openai]") {
  run_result r = run(false, true, "Try: <tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>");
  CHECK(r.result.tool_calls.empty());
  CHECK(r.result.content == "Try: <tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>");

  r = run(false, true, "<tool_call>{\"arguments\": {}}</tool_call>");  // no name
  CHECK(r.result.tool_calls.empty());
  CHECK(r.result.content == "<tool_call>{\"arguments\": {}}</tool_call>");

  r = run(false, true, "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>");
  CHECK(r.result.tool_calls.empty());
  CHECK(r.result.content == "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>");

  r = run(false, true, "x <tool_call>{\"name\": \"f\"");  // cut off by max_tokens
  CHECK(r.result.content == "x <tool_call>{\"name\": \"f\"");

  r = run(false, true, "<tool_call>bad\xff</tool_call>");
  CHECK(r.result.content == "<tool_call>bad" + fffd + "</tool_call>");

  r = run(false, true, "<tool_call>" + std::string(300, '[') + std::string(300, ']') + "</tool_call>");
  CHECK(r.result.tool_calls.empty());
}

TEST_CASE("without parse_tool_calls the tags are content", "[openai]") {
  const run_result r = run(false, false, "<tool_call>{\"name\":\"f\"}</tool_call>");
  CHECK(r.result.tool_calls.empty());
  CHECK(r.result.content == "<tool_call>{\"name\":\"f\"}</tool_call>");
}

TEST_CASE("tool-call tags inside reasoning are reasoning text", "[openai]") {
  const run_result r = run(true, true, "<think>maybe <tool_call>x</tool_call></think>done");
  CHECK(r.result.reasoning == "maybe <tool_call>x</tool_call>");
  CHECK(r.result.content == "done");
  CHECK(r.result.tool_calls.empty());
}

TEST_CASE("content whitespace is kept when there are no tool calls", "[openai]") {
  const run_result r = run(true, true, "  indented\n\n");
  CHECK(r.result.content == "  indented\n\n");
}

TEST_CASE("UTF-8 split across byte tokens is emitted whole", "[openai]") {
  output_parser p(false, false);
  CHECK(p.feed(0xC3).empty());  // first byte of é
  std::vector<output_delta> d = p.feed(0xA9);
  REQUIRE(d.size() == 1);
  CHECK(d[0].text == "\xC3\xA9");

  const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600, four bytes
  CHECK(p.feed(0xF0).empty());
  CHECK(p.feed(0x9F).empty());
  CHECK(p.feed(0x98).empty());
  d = p.feed(0x80);
  REQUIRE(d.size() == 1);
  CHECK(d[0].text == emoji);
  CHECK(p.finish().empty());
  CHECK(p.result().content == "\xC3\xA9" + emoji);
}

TEST_CASE("invalid bytes become U+FFFD", "[openai]") {
  // a stray continuation byte, an invalid lead, an interrupted sequence, a surrogate, an overlong
  run_result r = run(false, false,
                     "a\x80"
                     "b\xFF"
                     "c\xE2\x82"
                     "d\xED\xA0\x80"
                     "e\xC0\xAF");
  CHECK(r.result.content ==
        "a" + fffd + "b" + fffd + "c" + fffd + fffd + "d" + fffd + fffd + fffd + "e" + fffd + fffd);

  // Held bytes are flushed by a special token and by finish().
  output_parser p(false, false);
  std::vector<token_id> ids = bytes("x\xE2\x82");
  ids.push_back(special_tokens::im_end);
  const std::vector<token_id> tail = bytes("y\xF0\x9F");
  ids.insert(ids.end(), tail.begin(), tail.end());
  r = run(p, ids);
  CHECK(r.result.content == "x" + fffd + fffd + "y" + fffd + fffd);
}

TEST_CASE("other special tokens and out-of-range ids produce nothing", "[openai]") {
  output_parser p(true, true);
  const run_result r = run(p, {'a', special_tokens::im_start, special_tokens::image_pad, 266, 271, 272, -1,
                               special_tokens::tool_response_open, 'b', special_tokens::endoftext});
  CHECK(r.result.content == "ab");
}

TEST_CASE("deltas concatenate to result for a long mixed run", "[openai]") {
  // run() checks the invariant; this input exercises every path at once.
  output_parser p(true, true);
  const run_result r =
      run(p, tokenizer().encode("  <think>\n\n r\xC3\xA9 \n\n</think>\n\n\xF0\x9F\x98\x80 x \n"
                                "<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>\n\n"
                                "<tool_call>oops</tool_call> tail\n<tool_call>{\"name\":\"g\"}"
                                "</tool_call>\n<|im_end|>",
                                true));
  CHECK(r.result.reasoning == " r\xC3\xA9 ");
  CHECK(r.result.content == "\xF0\x9F\x98\x80 x\n\n<tool_call>oops</tool_call> tail");
  REQUIRE(r.result.tool_calls.size() == 2);
  CHECK(r.result.tool_calls[1].id == "call_1");
  CHECK(r.result.tool_calls[1].name == "g");
}
