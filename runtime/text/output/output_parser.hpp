#pragma once
// Turns generated token ids into the assistant's reasoning, content and tool calls, one delta at
// a time, for streaming and for the final message alike.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <vector>

#include "protocol/openai_types.hpp"
#include "runtime/core/token.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "runtime/text/tokenizer/utf8_stream.hpp"

namespace anchorage {

// Contract:
//  * Invariant: concatenating the text of every reasoning delta returned by feed() and finish()
//    gives result().reasoning, the content deltas give result().content, and the tool_call
//    deltas are result().tool_calls in order. Deltas carry exactly the trimmed text below.
//  * Text is UTF-8: the bytes of text tokens are held until they complete a sequence (at most 3
//    bytes are held), so a character split across tokens goes out whole in one delta. The byte
//    tokenizer: each byte of an invalid or interrupted sequence (a special token or finish()
//    arriving mid-sequence) comes out as one U+FFFD; what follows is decoded afresh. A BPE
//    tokenizer: each maximal subpart of an invalid or interrupted sequence is one U+FFFD
//    (utf8_stream.hpp). The two differ only on invalid input ("\xE2\x82x": two U+FFFD from the
//    byte tokenizer, one from BPE); the byte tokenizer keeps its historical rule.
//  * The markers are the tokenizer's (tokenizer::ids()); one it lacks is never seen.
//  * Reasoning (parse_reasoning): when the first non-whitespace output is <think>, the text up
//    to </think> is reasoning and the rest content. Newlines right after <think>, right before
//    </think> and right after </think> are dropped; whitespace before <think> is dropped.
//    Unterminated reasoning (the generation ended inside it) stays reasoning.
//    starts_in_reasoning says the prompt itself opened the block (a template that ends its
//    generation prompt with "<think>\n"): output is then reasoning from the first token.
//    Otherwise a </think> with no <think> before it is dropped and its surrounding text stays
//    content (deltas already sent cannot be taken back); a later <think> is dropped too.
//  * Tool calls (parse_tool_calls): outside reasoning, the bytes between <tool_call> and
//    </tool_call> are parsed at the closing tag as {"name": string, "arguments": object}
//    (arguments may also be absent or null, read as {}, or a string holding a JSON object).
//    A call that is not that JSON is read in Qwen3.5's XML form (<function=NAME> with
//    <parameter=KEY> blocks, qwen35_tool_parser.hpp; `tools` gives the parameters' types).
//    A valid call becomes one tool_call delta: id "call_<index>", arguments dumped compactly.
//    Anything else, and a call still open at finish(), is emitted as content verbatim, tags
//    included. Other special tokens inside a call are dropped; a nested <tool_call> emits the
//    open one verbatim and starts anew. Whitespace between content and a call, between calls
//    and after the last call is dropped (it is held until the next text decides).
//  * Without parse_reasoning, <think> and </think> are content text; without parse_tool_calls,
//    <tool_call> and </tool_call> are. Every other special token (<|im_end|>, <|endoftext|>,
//    ..., for BPE every other added token), reserved ids and ids the tokenizer does not define
//    produce nothing.
//  * Stop strings are not handled here.
// The text the parser shows for `bytes` that arrive in one run (no special token between them, and
// nothing after them): valid UTF-8, each invalid or truncated sequence replaced by U+FFFD by the
// tokenizer's rule above. The end alignment reads the rows with it.
std::string shown_text(const tokenizer& tok, std::string_view bytes);

class output_parser {
 public:
  output_parser(bool parse_reasoning, bool parse_tool_calls, bool starts_in_reasoning = false,
                tokenizer tok = tokenizer(), nlohmann::ordered_json tools = nullptr);

  // The deltas token `t` completes (often none, e.g. mid UTF-8 sequence or inside a tool call).
  std::vector<output_delta> feed(token_id t);
  // Flushes everything held; call once, after the last token. feed() must not follow.
  std::vector<output_delta> finish();

  // Everything emitted so far.
  const assistant_output& result() const { return result_; }

 private:
  enum class section { start, reasoning, content, tool_call };

  void on_byte(unsigned char b, std::vector<output_delta>& out);
  void on_text(const std::string& bytes, std::vector<output_delta>& out);
  std::string lossy(const std::string& bytes) const;
  void on_special(token_id t, std::vector<output_delta>& out);
  void flush_utf8(std::vector<output_delta>& out);
  void route_text(std::string text, std::vector<output_delta>& out);
  void route_reasoning(std::string text, std::vector<output_delta>& out);
  void route_content(std::string text, std::vector<output_delta>& out);
  void open_tool_call(std::vector<output_delta>& out);
  void close_tool_call(std::vector<output_delta>& out);
  void emit_text(output_delta::kind what, std::string text, std::vector<output_delta>& out);

  tokenizer tok_;
  nlohmann::ordered_json tools_;
  bool parse_reasoning_;
  bool parse_tool_calls_;
  section section_ = section::start;
  std::string utf8_held_;        // byte tokenizer: an incomplete UTF-8 sequence, at most 3 bytes
  utf8_stream utf8_;             // BPE: the same
  std::string newlines_held_;    // trailing newlines of reasoning, dropped if </think> follows
  std::string ws_held_;          // trailing whitespace of content, see the contract
  bool strip_newlines_ = false;  // drop leading newlines of the next text (after </think>)
  std::string call_bytes_;       // raw bytes of the open tool call
  std::string call_ws_;          // whitespace held before the open tool call
  assistant_output result_;
};

}  // namespace anchorage
