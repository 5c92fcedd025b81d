#pragma once
// OpenAI Responses streams read back: the raw SSE bytes split into events, and the output they
// add up to, put together the way the openai SDK's response accumulator does it, with the rules
// it enforces checked on the way (every problem a line in `problems`).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace anchorage::testing {

struct responses_event {
  std::string name;     // the `event:` line
  nlohmann::json data;  // the `data:` line, parsed (discarded when it is not JSON)
};

// What a stream adds up to.
struct responses_accumulated {
  nlohmann::json response;         // the last lifecycle event's response (completed, incomplete, failed)
  nlohmann::json output;           // the output items as the item events built them
  std::vector<std::string> names;  // the event names, in order
  std::vector<std::string> problems;
  nlohmann::json error;  // the error event's data, null when none came
  std::size_t comments = 0;
};

// Splits `raw` at blank lines: each event is one `event:` line and one `data:` line, or one
// `: comment` line.
inline std::vector<responses_event> split_responses_events(const std::string& raw,
                                                           responses_accumulated& acc) {
  std::vector<responses_event> out;
  std::size_t at = 0;
  while (at < raw.size()) {
    const std::size_t end = raw.find("\n\n", at);
    if (end == std::string::npos) {
      acc.problems.push_back("unterminated event: " + raw.substr(at, 200));
      break;
    }
    const std::string block = raw.substr(at, end - at);
    at = end + 2;
    if (block.rfind(":", 0) == 0 && block.find('\n') == std::string::npos) {
      ++acc.comments;
      continue;
    }
    const std::size_t nl = block.find('\n');
    if (nl == std::string::npos || block.rfind("event: ", 0) != 0 ||
        block.compare(nl + 1, 6, "data: ") != 0 || block.find('\n', nl + 1) != std::string::npos) {
      acc.problems.push_back("not one event line and one data line: " + block.substr(0, 200));
      continue;
    }
    responses_event ev;
    ev.name = block.substr(7, nl - 7);
    ev.data = nlohmann::json::parse(block.substr(nl + 7), nullptr, /*allow_exceptions=*/false);
    if (ev.data.is_discarded()) acc.problems.push_back("data is not JSON: " + block.substr(0, 200));
    out.push_back(std::move(ev));
  }
  return out;
}

// The item event `data` addresses: checks output_index and item_id.
inline nlohmann::json* addressed_item(responses_accumulated& acc, const nlohmann::json& data,
                                      const std::string& where) {
  const long index = data.value("output_index", -1L);
  if (index < 0 || index >= static_cast<long>(acc.output.size())) {
    acc.problems.push_back(where + "output_index " + std::to_string(index) + " is not an item");
    return nullptr;
  }
  nlohmann::json& item = acc.output[static_cast<std::size_t>(index)];
  if (data.contains("item_id") && data["item_id"] != item["id"])
    acc.problems.push_back(where + "item_id differs from the item's id");
  return &item;
}

// The content part of `item` at the event's content_index.
inline nlohmann::json* addressed_part(responses_accumulated& acc, nlohmann::json& item,
                                      const nlohmann::json& data, const std::string& where) {
  const long index = data.value("content_index", -1L);
  if (!item["content"].is_array() || index < 0 || index >= static_cast<long>(item["content"].size())) {
    acc.problems.push_back(where + "content_index " + std::to_string(index) + " is not a part");
    return nullptr;
  }
  return &item["content"][static_cast<std::size_t>(index)];
}

inline void append_text(nlohmann::json& to, const nlohmann::json& delta) {
  to = to.get<std::string>() + delta.get<std::string>();
}

// Applies one item-scoped event to acc.output.
inline void apply_item_event(responses_accumulated& acc, const responses_event& ev,
                             const std::string& where) {
  const nlohmann::json& d = ev.data;
  if (ev.name == "response.output_item.added") {
    if (d.value("output_index", -1L) != static_cast<long>(acc.output.size()))
      acc.problems.push_back(where + "output_index is not the next");
    if (!d["item"].contains("id") || d["item"]["id"].get<std::string>().empty())
      acc.problems.push_back(where + "an item without an id");
    for (const nlohmann::json& other : acc.output)
      if (other["id"] == d["item"]["id"]) acc.problems.push_back(where + "a second item with one id");
    acc.output.push_back(d["item"]);
    return;
  }
  nlohmann::json* item = addressed_item(acc, d, where);
  if (!item) return;
  if (ev.name == "response.output_item.done") {
    if ((*item)["type"] != d["item"]["type"] || (*item)["id"] != d["item"]["id"])
      acc.problems.push_back(where + "the done item is not the added one");
    *item = d["item"];
  } else if (ev.name == "response.content_part.added") {
    if (d.value("content_index", -1L) != static_cast<long>((*item)["content"].size()))
      acc.problems.push_back(where + "content_index is not the next");
    (*item)["content"].push_back(d["part"]);
  } else if (ev.name == "response.content_part.done") {
    if (nlohmann::json* part = addressed_part(acc, *item, d, where)) *part = d["part"];
  } else if (ev.name == "response.output_text.delta" || ev.name == "response.reasoning_text.delta") {
    const char* want = ev.name == "response.output_text.delta" ? "output_text" : "reasoning_text";
    nlohmann::json* part = addressed_part(acc, *item, d, where);
    if (part && (*part)["type"] != want) acc.problems.push_back(where + "a delta for a part of another type");
    if (part) append_text((*part)["text"], d["delta"]);
    if (d["delta"].get<std::string>().empty()) acc.problems.push_back(where + "an empty delta");
  } else if (ev.name == "response.output_text.done" || ev.name == "response.reasoning_text.done") {
    nlohmann::json* part = addressed_part(acc, *item, d, where);
    if (part && (*part)["text"] != d["text"])
      acc.problems.push_back(where + "done text differs from the deltas");
  } else if (ev.name == "response.function_call_arguments.delta") {
    if ((*item)["type"] != "function_call") acc.problems.push_back(where + "arguments for a non-call item");
    append_text((*item)["arguments"], d["delta"]);
  } else if (ev.name == "response.function_call_arguments.done") {
    if ((*item)["arguments"] != d["arguments"])
      acc.problems.push_back(where + "done arguments differ from the deltas");
  } else {
    acc.problems.push_back(where + "an unknown event");
  }
}

// Applies the events in order and checks: sequence_number 0, 1, 2...; data.type the event name;
// response.created first and one lifecycle end (completed, incomplete or failed) last.
inline responses_accumulated accumulate_responses(const std::string& raw) {
  responses_accumulated acc;
  acc.output = nlohmann::json::array();
  const std::vector<responses_event> events = split_responses_events(raw, acc);
  bool ended = false;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const responses_event& ev = events[i];
    acc.names.push_back(ev.name);
    const std::string where = "event " + std::to_string(i) + " (" + ev.name + "): ";
    if (!ev.data.is_object()) continue;
    if (ev.data.value("type", "") != ev.name)
      acc.problems.push_back(where + "data.type differs from the event name");
    if (ev.data.value("sequence_number", -1L) != static_cast<long>(i))
      acc.problems.push_back(where + "sequence_number is not " + std::to_string(i));
    if (ended) acc.problems.push_back(where + "after the end");
    if (i == 0 && ev.name != "response.created")
      acc.problems.push_back(where + "the first event is not response.created");
    if (ev.name == "error") {
      acc.error = ev.data;
    } else if (ev.name == "response.created" || ev.name == "response.in_progress") {
      if (ev.data["response"]["status"] != "in_progress")
        acc.problems.push_back(where + "status is not in_progress");
      acc.response = ev.data["response"];
    } else if (ev.name == "response.completed" || ev.name == "response.incomplete" ||
               ev.name == "response.failed") {
      acc.response = ev.data["response"];
      ended = true;
    } else {
      apply_item_event(acc, ev, where);
    }
  }
  if (!ended) acc.problems.push_back("no response.completed, response.incomplete or response.failed");
  return acc;
}

}  // namespace anchorage::testing
