#include "runtime/text/template/prompt_render.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "runtime/text/template/prompt_images.hpp"

namespace anchorage {
namespace {

std::string head_digest(const std::vector<std::int32_t>& prompt) {
  const std::size_t n = std::min<std::size_t>(prompt.size(), 512);
  const auto h = XXH3_64bits(prompt.data(), n * sizeof(std::int32_t));
  char buf[24];
  std::snprintf(buf, sizeof buf, "h%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// A chat's session: its messages up to and including the first user message. Two sessions of one
// client share the system prompt (often far more than 512 tokens of it) and differ there.
std::string chat_session_digest(const std::vector<chat_message>& messages) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (const auto& m : messages) {
    XXH3_64bits_update(st, m.role.data(), m.role.size());
    XXH3_64bits_update(st, "\x1f", 1);
    XXH3_64bits_update(st, m.content.data(), m.content.size());
    XXH3_64bits_update(st, "\x1e", 1);
    if (m.role == "user") break;
  }
  const auto h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  char buf[24];
  std::snprintf(buf, sizeof buf, "c%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// The first image or video part, for a template that cannot show one: a 400 naming the part.
std::optional<api_error> unshown_media(const std::vector<chat_message>& messages, chat_renderer renderer) {
  if (shows_images(renderer)) return std::nullopt;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto& parts = messages[i].parts;
    for (std::size_t j = 0; j < parts.size(); ++j) {
      if (parts[j].what == content_part::kind::text) continue;
      const char* what = parts[j].what == content_part::kind::image ? "image" : "video";
      return api_error{400, "invalid_request_error",
                       std::string(what) + " input is not supported by this model's chat template ('" +
                           std::string(chat_renderer_name(renderer)) +
                           "'); the qwen3.5 template shows images and videos as placeholders",
                       "messages[" + std::to_string(i) + "].content[" + std::to_string(j) + "]"};
    }
  }
  return std::nullopt;
}

}  // namespace

std::variant<board_job, api_error> render_request(const completion_request& r, const render_limits& lim,
                                                  const tokenizer& tok, std::uint64_t fallback_seed) {
  board_job j;
  client_request& c = *j.client();
  if (!tok.is_byte_level()) j.tok = std::make_shared<const tokenizer>(tok);
  std::string param;
  if (r.kind == request_kind::chat) {
    j.route = request_kind::chat;
    param = "messages";
    const bool tools = r.tool_choice != "none" && r.tools.is_array() && !r.tools.empty();
    if (auto e = unshown_media(r.messages, lim.renderer)) return *e;
    static const nlohmann::ordered_json no_tools;
    std::string text;
    try {
      text = render_prompt_text(lim.renderer, r.messages, tools ? r.tools : no_tools, r.enable_thinking);
    } catch (const std::exception& e) {
      return api_error{400, "invalid_request_error", e.what(), "messages"};
    }
    const auto ids = tok.encode(text, true);
    j.prompt.assign(ids.begin(), ids.end());
    // With a vision tower each image's placeholder becomes its rows (prompt_images.hpp); without
    // one the model reads the placeholder alone.
    if (lim.image_processor) {
      if (auto e = expand_images(r.messages, *lim.image_processor, tok.ids().image_pad, j.prompt, j.images))
        return *e;
    }
    // Where the last user message starts (the disk tier anchors a session's first request
    // below it): the last "<|im_start|>user" the template rendered.
    const auto mark = tok.encode("<|im_start|>user", true);
    if (auto at = std::find_end(j.prompt.begin(), j.prompt.end(), mark.begin(), mark.end());
        at != j.prompt.end())
      c.user_start = static_cast<long>(at - j.prompt.begin());
    j.rules.parse_reasoning = r.enable_thinking;
    j.rules.parse_tool_calls = tools;
    if (tools) j.rules.tools = std::make_shared<const nlohmann::ordered_json>(r.tools);
    j.rules.starts_in_reasoning = prompt_opens_reasoning(lim.renderer, r.enable_thinking);
    if (r.enable_thinking) {
      j.rules.reasoning_budget = lim.reasoning_budget;
      if (r.reasoning_budget)
        j.rules.reasoning_budget = lim.reasoning_budget < 0
                                       ? *r.reasoning_budget
                                       : std::min(lim.reasoning_budget, *r.reasoning_budget);
    }
  } else {
    j.route = request_kind::completion;
    param = "prompt";
    if (r.prompt_tokens) {
      j.prompt = *r.prompt_tokens;
    } else {
      const auto ids = tok.encode(r.prompt_text.value_or(""), true);
      j.prompt.assign(ids.begin(), ids.end());
    }
  }
  const long n = static_cast<long>(j.prompt.size());
  if (n == 0) return api_error{400, "invalid_request_error", "the prompt is empty", param};
  if (n >= lim.ctx_size)
    return api_error{400, "invalid_request_error",
                     "the prompt has " + std::to_string(n) + " tokens; the context holds " +
                         std::to_string(lim.ctx_size) + " including at least one generated token",
                     param, "context_length_exceeded"};
  const long room = lim.ctx_size - n;
  long want = r.max_tokens.value_or(r.kind == request_kind::chat ? room : lim.default_completion_max_tokens);
  j.sampling.max_tokens = std::min(want, room);
  // Greedy: an explicit temperature 0, or top_k 1 (the only top_k the sampler has: its argmax).
  c.greedy = (r.temperature_given && r.temperature == 0.0) || r.top_k == 1L;
  j.sampling.temperature = c.greedy ? 0.0 : r.temperature;
  j.sampling.top_p = r.top_p;
  j.sampling.seed = r.seed.value_or(fallback_seed);
  j.sampling.seed_explicit = r.seed.has_value();
  j.sampling.stop_tokens = {tok.ids().im_end};
  if (tok.ids().endoftext != no_token) j.sampling.stop_tokens.push_back(tok.ids().endoftext);
  j.rules.stop_strings = r.stop;
  j.sampling.logit_bias = r.logit_bias;
  if (r.kind == request_kind::chat) c.tool_choice = r.tool_choice;
  if (!r.response_format.is_null()) c.response_format = r.response_format.dump();
  if (r.prompt_cache_key)
    j.session_key = *r.prompt_cache_key;
  else if (!r.session_header.empty())
    j.session_key = "header:" + r.session_header;
  else if (r.kind == request_kind::chat)
    j.session_key = chat_session_digest(r.messages);
  else
    j.session_key = head_digest(j.prompt);
  c.opencode = r.user_agent.rfind("opencode/", 0) == 0 || r.session_header.rfind("ses_", 0) == 0;
  return j;
}

}  // namespace anchorage
