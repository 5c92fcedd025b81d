#pragma once
// Anthropic Messages streams read back: the raw SSE bytes split into (event, data) pairs, and the
// message they add up to, put together the way the SDK's MessageStream does it, with the rules a
// client relies on checked on the way (every problem a line in `problems`).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace anchorage::testing {

struct anthropic_event {
  std::string name;     // the `event:` line
  nlohmann::json data;  // the `data:` line, parsed (discarded when it is not JSON)
};

// Splits `raw` at blank lines; each event must be exactly one `event:` line and one `data:`
// line. Anything else is a problem.
inline std::vector<anthropic_event> split_anthropic_events(const std::string& raw,
                                                           std::vector<std::string>& problems) {
  std::vector<anthropic_event> out;
  std::size_t at = 0;
  while (at < raw.size()) {
    const std::size_t end = raw.find("\n\n", at);
    if (end == std::string::npos) {
      problems.push_back("unterminated event: " + raw.substr(at, 200));
      break;
    }
    const std::string block = raw.substr(at, end - at);
    at = end + 2;
    const std::size_t nl = block.find('\n');
    if (nl == std::string::npos || block.rfind("event: ", 0) != 0 ||
        block.compare(nl + 1, 6, "data: ") != 0 || block.find('\n', nl + 1) != std::string::npos) {
      problems.push_back("not one event line and one data line: " + block.substr(0, 200));
      continue;
    }
    anthropic_event ev;
    ev.name = block.substr(7, nl - 7);
    ev.data = nlohmann::json::parse(block.substr(nl + 7), nullptr, /*allow_exceptions=*/false);
    if (ev.data.is_discarded()) problems.push_back("data is not JSON: " + block.substr(0, 200));
    out.push_back(std::move(ev));
  }
  return out;
}

// What a stream adds up to.
struct anthropic_accumulated {
  nlohmann::json message;          // message_start's message with the content and message_delta applied
  std::vector<std::string> names;  // the event names, in order (pings included)
  std::vector<std::string> problems;
  nlohmann::json error;    // the error event's data, null when none came
  nlohmann::json x_cache;  // message_delta's x_cache
};

// Applies the events as the SDK's accumulator does (content_block_start appends, deltas address
// content[index], input_json_delta fragments parsed at content_block_stop, message_delta
// overwrites stop_reason and the usage counters it carries) and checks the order: message_start
// first, one block open at a time, indices 0, 1, 2..., signature_delta just before a thinking
// block's stop, message_stop last and nothing after it.
inline anthropic_accumulated accumulate_anthropic(const std::string& raw) {
  using json = nlohmann::json;
  anthropic_accumulated acc;
  const std::vector<anthropic_event> events = split_anthropic_events(raw, acc.problems);
  int open = -1;
  std::string partial_json;
  bool stopped = false;
  std::string last_delta_type;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const anthropic_event& ev = events[i];
    acc.names.push_back(ev.name);
    const std::string where = "event " + std::to_string(i) + " (" + ev.name + "): ";
    if (!ev.data.is_object()) continue;
    if (ev.data.value("type", "") != ev.name)
      acc.problems.push_back(where + "data.type differs from the event name");
    if (stopped) acc.problems.push_back(where + "after message_stop");
    if (ev.name == "ping") continue;
    if (ev.name == "error") {
      acc.error = ev.data;
      continue;
    }
    if (ev.name != "message_start" && acc.message.is_null())
      acc.problems.push_back(where + "before message_start");
    if (ev.name == "message_start") {
      if (!acc.message.is_null()) acc.problems.push_back(where + "a second message_start");
      acc.message = ev.data["message"];
      if (!acc.message["content"].is_array() || !acc.message["content"].empty())
        acc.problems.push_back(where + "content is not []");
      if (!acc.message["stop_reason"].is_null()) acc.problems.push_back(where + "stop_reason is not null");
    } else if (ev.name == "content_block_start") {
      const int index = ev.data.value("index", -1);
      if (open >= 0) acc.problems.push_back(where + "a block is still open");
      if (index != static_cast<int>(acc.message["content"].size()))
        acc.problems.push_back(where + "index " + std::to_string(index) + " is not the next");
      open = index;
      partial_json.clear();
      last_delta_type.clear();
      json block = ev.data["content_block"];
      if (block["type"] == "tool_use" && block["input"] != json::object())
        acc.problems.push_back(where + "a tool_use block does not start with input {}");
      acc.message["content"].push_back(block);
    } else if (ev.name == "content_block_delta") {
      const int index = ev.data.value("index", -1);
      if (index != open || open < 0) {
        acc.problems.push_back(where + "a delta for a block that is not open");
        continue;
      }
      json& block = acc.message["content"][static_cast<std::size_t>(index)];
      const json& d = ev.data["delta"];
      const std::string type = d.value("type", "");
      last_delta_type = type;
      if (type == "text_delta" && block["type"] == "text") {
        block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
        if (d["text"].get<std::string>().empty()) acc.problems.push_back(where + "an empty text_delta");
      } else if (type == "thinking_delta" && block["type"] == "thinking") {
        block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      } else if (type == "signature_delta" && block["type"] == "thinking") {
        block["signature"] = d["signature"];
      } else if (type == "input_json_delta" && block["type"] == "tool_use") {
        partial_json += d["partial_json"].get<std::string>();
      } else {
        acc.problems.push_back(where + "a " + type + " in a " + block.value("type", "?") + " block");
      }
    } else if (ev.name == "content_block_stop") {
      const int index = ev.data.value("index", -1);
      if (index != open) acc.problems.push_back(where + "stops a block that is not open");
      if (open >= 0) {
        json& block = acc.message["content"][static_cast<std::size_t>(open)];
        if (block["type"] == "tool_use") {
          const json input = json::parse(partial_json.empty() ? "{}" : partial_json, nullptr, false);
          if (input.is_discarded()) acc.problems.push_back(where + "input_json_delta is not JSON");
          block["input"] = input;
        }
        if (block["type"] == "thinking" &&
            (last_delta_type != "signature_delta" || block.value("signature", "").empty()))
          acc.problems.push_back(where + "a thinking block without a signature_delta just before its stop");
        if (block["type"] == "text" && block.value("text", "").empty())
          acc.problems.push_back(where + "an empty text block");
      }
      open = -1;
    } else if (ev.name == "message_delta") {
      if (open >= 0) acc.problems.push_back(where + "a block is still open");
      acc.message["stop_reason"] = ev.data["delta"]["stop_reason"];
      acc.message["stop_sequence"] = ev.data["delta"]["stop_sequence"];
      for (const auto& [k, v] : ev.data["usage"].items()) acc.message["usage"][k] = v;
      acc.x_cache = ev.data.value("x_cache", json());
    } else if (ev.name == "message_stop") {
      stopped = true;
    } else {
      acc.problems.push_back(where + "an unknown event");
    }
  }
  if (!stopped && acc.error.is_null()) acc.problems.push_back("no message_stop");
  return acc;
}

}  // namespace anchorage::testing
