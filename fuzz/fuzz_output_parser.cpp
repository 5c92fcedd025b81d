// The tool-call output parsers (runtime/text): the streaming output_parser fed any token ids of
// the byte tokenizer (reasoning, tool calls, every special token), and parse_qwen35_output on any
// text, with tools whose parameters are typed. Neither throws; the parser's deltas add up to its
// result (output_parser.hpp's invariant), each call's arguments are a JSON object.
//
// Input: one byte of switches (parse_reasoning, parse_tool_calls, starts_in_reasoning), then the
// ids, one byte each; 0xff escapes: 0xff n is the id 256 + n for n < 16 (the specials and the
// reserved ids), else the byte n.
#include <exception>

#include "fuzz/fuzz_support.hpp"
#include "runtime/text/output/output_parser.hpp"
#include "runtime/text/output/qwen35_tool_parser.hpp"

using namespace anchorage;
using json = nlohmann::ordered_json;

namespace {

const json& tools() {
  static const json t = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "hourly": {"type": "boolean"},
      "where": {"type": "object"}, "hours": {"type": "array"}, "scale": {"type": "number"}}}}},
    {"type": "function", "function": {"name": "noop"}}])");
  return t;
}

std::vector<token_id> ids_of(const std::uint8_t* data, std::size_t size) {
  std::vector<token_id> ids;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] != 0xff || i + 1 == size) {
      ids.push_back(data[i]);
      continue;
    }
    const std::uint8_t n = data[++i];
    ids.push_back(n < 16 ? 256 + n : n);
  }
  return ids;
}

void stream(const std::vector<token_id>& ids, std::uint8_t switches) {
  output_parser p((switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0, tokenizer(), tools());
  std::string reasoning, content;
  std::vector<tool_call> calls;
  auto take = [&](const std::vector<output_delta>& deltas) {
    for (const auto& d : deltas) {
      if (d.what == output_delta::kind::reasoning) reasoning += d.text;
      if (d.what == output_delta::kind::content) content += d.text;
      if (d.what == output_delta::kind::tool_call) {
        fuzz::check(d.index == static_cast<int>(calls.size()), "tool-call deltas come in order");
        calls.push_back(d.call);
      }
    }
  };
  for (token_id t : ids) take(p.feed(t));
  take(p.finish());
  const assistant_output& r = p.result();
  fuzz::check(reasoning == r.reasoning, "the reasoning deltas add up to the result's");
  fuzz::check(content == r.content, "the content deltas add up to the result's");
  fuzz::check(calls.size() == r.tool_calls.size(), "every call is a delta");
  for (std::size_t i = 0; i < calls.size(); ++i) {
    fuzz::check(calls[i].name == r.tool_calls[i].name && calls[i].arguments == r.tool_calls[i].arguments,
                "the call deltas are the result's calls");
    const json args = json::parse(calls[i].arguments, nullptr, false);
    fuzz::check(args.is_object(), "a call's arguments are a JSON object");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  try {
    stream(ids_of(data + 1, size - 1), data[0]);
    const qwen35_parsed_output out = parse_qwen35_output(fuzz::as_text(data + 1, size - 1), tools());
    for (const auto& c : out.tool_calls)
      fuzz::check(c.arguments.is_object(), "XML calls' arguments are an object");
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}
