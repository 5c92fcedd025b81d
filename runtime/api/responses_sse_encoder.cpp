#include "runtime/api/responses_sse_encoder.hpp"

#include <utility>

namespace anchorage {

using json = nlohmann::ordered_json;

responses_sse_encoder::responses_sse_encoder(responses_meta meta) : meta_(std::move(meta)) {}

void responses_sse_encoder::emit(const char* type, json data, std::vector<std::string>& out) {
  json ev = {{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [k, v] : data.items()) ev[k] = std::move(v);
  out.push_back(responses_sse(ev));
}

std::vector<std::string> responses_sse_encoder::open() {
  std::vector<std::string> out;
  if (phase_ != phase::unopened) return out;
  phase_ = phase::streaming;
  emit("response.created", {{"response", responses_in_progress(meta_)}}, out);
  emit("response.in_progress", {{"response", responses_in_progress(meta_)}}, out);
  return out;
}

std::vector<std::string> responses_sse_encoder::feed(const stream_event& ev) {
  if (phase_ == phase::closed) return {};
  std::vector<std::string> out = open();
  switch (ev.what) {
    case stream_event::kind::accepted:
      break;
    case stream_event::kind::progress:
      out.push_back(": prefill " + std::to_string(ev.done_tokens) + "/" + std::to_string(ev.prompt_tokens) +
                    "\n\n");
      break;
    case stream_event::kind::delta:
      for (const output_delta& d : ev.deltas) add_delta(d, out);
      break;
    case stream_event::kind::finished:
      finish(ev, out);
      phase_ = phase::closed;
      break;
    case stream_event::kind::failed:
      fail(ev.error, out);
      phase_ = phase::closed;
      break;
  }
  return out;
}

void responses_sse_encoder::add_delta(const output_delta& d, std::vector<std::string>& out) {
  switch (d.what) {
    case output_delta::kind::reasoning:
      if (!d.text.empty()) add_reasoning(d.text, out);
      return;
    case output_delta::kind::content:
      if (!d.text.empty()) add_content(d.text, out);
      return;
    case output_delta::kind::tool_call:
      close_reasoning(out);
      streamed_.tool_calls.push_back(d.call);  // its item goes out at the end
      return;
  }
}

int responses_sse_encoder::add_item(json item, std::vector<std::string>& out) {
  const int index = static_cast<int>(items_.size());
  items_.push_back(item);
  emit("response.output_item.added", {{"output_index", index}, {"item", std::move(item)}}, out);
  return index;
}

void responses_sse_encoder::item_done(int index, std::vector<std::string>& out) {
  emit("response.output_item.done",
       {{"output_index", index}, {"item", items_[static_cast<std::size_t>(index)]}}, out);
}

void responses_sse_encoder::add_reasoning(const std::string& text, std::vector<std::string>& out) {
  if (reasoning_index_ < 0) {
    json item = reasoning_item(meta_.id, "");
    if (reasoning_items_ > 0)
      item["id"] = item["id"].get<std::string>() + "_" + std::to_string(reasoning_items_);
    ++reasoning_items_;
    item["content"] = json::array();
    reasoning_index_ = add_item(std::move(item), out);
    json& added = items_[static_cast<std::size_t>(reasoning_index_)];
    const json part = {{"type", "reasoning_text"}, {"text", ""}};
    emit("response.content_part.added",
         {{"item_id", added["id"]}, {"output_index", reasoning_index_}, {"content_index", 0}, {"part", part}},
         out);
    added["content"].push_back(part);
  }
  reasoning_text_ += text;
  streamed_.reasoning += text;
  emit("response.reasoning_text.delta",
       {{"item_id", items_[static_cast<std::size_t>(reasoning_index_)]["id"]},
        {"output_index", reasoning_index_},
        {"content_index", 0},
        {"delta", text}},
       out);
}

void responses_sse_encoder::close_reasoning(std::vector<std::string>& out) {
  if (reasoning_index_ < 0) return;
  json& item = items_[static_cast<std::size_t>(reasoning_index_)];
  const json id = item["id"];
  emit("response.reasoning_text.done",
       {{"item_id", id}, {"output_index", reasoning_index_}, {"content_index", 0}, {"text", reasoning_text_}},
       out);
  const json part = {{"type", "reasoning_text"}, {"text", reasoning_text_}};
  item["content"][0] = part;
  emit("response.content_part.done",
       {{"item_id", id}, {"output_index", reasoning_index_}, {"content_index", 0}, {"part", part}}, out);
  item_done(reasoning_index_, out);
  reasoning_index_ = -1;
  reasoning_text_.clear();
}

void responses_sse_encoder::open_message(std::vector<std::string>& out) {
  if (message_index_ >= 0) return;
  close_reasoning(out);
  json item = message_item(meta_.id, "", "in_progress");
  item["content"] = json::array();
  message_index_ = add_item(std::move(item), out);
  json& added = items_[static_cast<std::size_t>(message_index_)];
  const json part = {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}};
  emit("response.content_part.added",
       {{"item_id", added["id"]}, {"output_index", message_index_}, {"content_index", 0}, {"part", part}},
       out);
  added["content"].push_back(part);
}

void responses_sse_encoder::add_content(const std::string& text, std::vector<std::string>& out) {
  open_message(out);
  streamed_.content += text;
  emit("response.output_text.delta",
       {{"item_id", items_[static_cast<std::size_t>(message_index_)]["id"]},
        {"output_index", message_index_},
        {"content_index", 0},
        {"delta", text},
        {"logprobs", json::array()}},
       out);
}

void responses_sse_encoder::close_message(const char* status, std::vector<std::string>& out) {
  if (message_index_ < 0 || message_done_) return;
  message_done_ = true;
  json& item = items_[static_cast<std::size_t>(message_index_)];
  const json id = item["id"];
  const std::string& text = streamed_.content;
  emit("response.output_text.done",
       {{"item_id", id},
        {"output_index", message_index_},
        {"content_index", 0},
        {"text", text},
        {"logprobs", json::array()}},
       out);
  const json part = {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
  item["content"][0] = part;
  emit("response.content_part.done",
       {{"item_id", id}, {"output_index", message_index_}, {"content_index", 0}, {"part", part}}, out);
  item["status"] = status;
  item_done(message_index_, out);
}

void responses_sse_encoder::add_call(int call_index, std::vector<std::string>& out) {
  const tool_call& call = streamed_.tool_calls[static_cast<std::size_t>(call_index)];
  json item = function_call_item(meta_.id, call_index, call, "in_progress");
  item["arguments"] = "";
  const int index = add_item(std::move(item), out);
  json& added = items_[static_cast<std::size_t>(index)];
  const json id = added["id"];
  emit("response.function_call_arguments.delta",
       {{"item_id", id}, {"output_index", index}, {"delta", call.arguments}}, out);
  emit("response.function_call_arguments.done",
       {{"item_id", id}, {"output_index", index}, {"name", call.name}, {"arguments", call.arguments}}, out);
  added["arguments"] = call.arguments;
  added["status"] = "completed";
  item_done(index, out);
}

void responses_sse_encoder::finish(const stream_event& ev, std::vector<std::string>& out) {
  const bool cut = ev.finish_reason == run_finish::length;
  close_reasoning(out);
  if (streamed_.tool_calls.empty()) open_message(out);  // no text and no call: an empty message
  close_message(cut ? "incomplete" : "completed", out);
  for (std::size_t k = 0; k < streamed_.tool_calls.size(); ++k) add_call(static_cast<int>(k), out);
  json response = responses_body(meta_, ev.output, ev.finish_reason, ev.usage, ev.cache);
  response["output"] = items_;
  emit(cut ? "response.incomplete" : "response.completed", {{"response", std::move(response)}}, out);
}

void responses_sse_encoder::fail(const api_error& e, std::vector<std::string>& out) {
  close_reasoning(out);
  close_message("incomplete", out);
  const std::string code = e.code.empty() ? e.type : e.code;
  emit("error",
       {{"error",
         {{"type", e.type},
          {"code", code},
          {"message", e.message},
          {"param", e.param.empty() ? json(nullptr) : json(e.param)}}}},
       out);
  json response = responses_in_progress(meta_);
  response["status"] = "failed";
  response["error"] = {{"code", code}, {"message", e.message}};
  response["output"] = items_;
  emit("response.failed", {{"response", std::move(response)}}, out);
}

}  // namespace anchorage
