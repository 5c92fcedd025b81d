#include "runtime/text/template/chat_renderer.hpp"

#include "runtime/text/template/chat_template.hpp"
#include "runtime/text/template/qwen35_template.hpp"
#include "runtime/text/template/qwen3_template.hpp"
#include "runtime/text/template/template_conversation.hpp"

namespace anchorage {

std::string_view chat_renderer_name(chat_renderer r) {
  switch (r) {
    case chat_renderer::builtin:
      return "builtin";
    case chat_renderer::qwen35:
      return "qwen3.5";
    case chat_renderer::qwen3:
      return "qwen3";
  }
  return "builtin";
}

bool prompt_opens_reasoning(chat_renderer r, bool enable_thinking) {
  return enable_thinking && r != chat_renderer::qwen3;
}

bool shows_images(chat_renderer r) { return r == chat_renderer::qwen35; }

std::string render_prompt_text(chat_renderer r, const std::vector<chat_message>& messages,
                               const nlohmann::ordered_json& tools, bool enable_thinking) {
  if (r == chat_renderer::builtin) {
    template_options t;
    t.enable_thinking = enable_thinking;
    // The built-in template's tools were always std::map-backed JSON (keys sorted); kept so.
    if (!tools.is_null()) t.tools = nlohmann::json::parse(tools.dump());
    return render_chat(messages, t);
  }
  chat_render_options o;
  o.enable_thinking = enable_thinking;
  o.tools = tools;
  if (r == chat_renderer::qwen35) return render_qwen35(template_messages(messages, content_form::parts), o);
  return render_qwen3(template_messages(messages, content_form::text), o);
}

}  // namespace anchorage
