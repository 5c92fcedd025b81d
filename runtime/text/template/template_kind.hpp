#pragma once
// Which chat template a checkpoint ships, among those Anchorage renders natively.
//
// recognize_template compares the checkpoint's template (chat_template.jinja, or the
// `chat_template` of tokenizer_config.json / the GGUF's tokenizer.chat_template) with the texts
// the native renderers were checked against (tests/support/templates/): equal up to whitespace at
// the two ends means that template; any other difference, however small, means unknown, so the
// server can refuse to start and name the template rather than render a prompt the model was not
// trained on.
#include <string_view>

namespace anchorage {

enum class template_kind {
  qwen35,   // Qwen3.5: render_qwen35 (qwen35_template.hpp)
  qwen3,    // Qwen3: render_qwen3 (qwen3_template.hpp)
  unknown,  // none we render natively
};

template_kind recognize_template(std::string_view jinja_source);

// The template text `kind` stands for (empty for unknown), as kept in tests/support/templates/.
std::string_view template_source(template_kind kind);

// "qwen3.5", "qwen3" or "unknown", for logs and error messages.
std::string_view template_kind_name(template_kind kind);

}  // namespace anchorage
