#pragma once
// Which chat template the server renders with, chosen once at start.
//
// --chat-template (template_sources::flag):
//   auto (default)  the checkpoint's template (--model: chat_template.jinja, tokenizer_config.json's
//                   chat_template, or the GGUF's tokenizer.chat_template); else, with
//                   --tokenizer FILE, a chat_template.jinja or else a tokenizer_config.json
//                   (its chat_template) in FILE's folder; else the built-in template.
//   builtin | qwen3.5 | qwen3   that renderer, whatever the checkpoint ships.
//   PATH                        the template in PATH (a .jinja file, or a tokenizer_config.json
//                               when PATH ends in .json).
// A template found this way must be one recognize_template knows (template_kind.hpp): any other
// refuses the start with a message naming the file it came from, the supported templates and
// --chat-template.
#include <string>

#include "runtime/text/template/chat_renderer.hpp"

namespace anchorage {

struct template_sources {
  std::string flag = "auto";        // --chat-template
  std::string checkpoint_template;  // loaded_model::chat_template; empty when it has none
  std::string checkpoint_source;    // loaded_model::source (the --model path); empty for a preset
  std::string tokenizer_path;       // --tokenizer FILE; empty when not given
};

struct template_choice {
  chat_renderer renderer = chat_renderer::builtin;
  std::string origin;  // where the choice came from, for the log ("/m/tokenizer_config.json")
};

// Throws std::invalid_argument, with a message for the user, for a template recognised as none
// of the native ones, a --chat-template file that cannot be read, or a tokenizer_config.json
// that is not JSON or whose chat_template is not a string (or a list with a "default" entry).
template_choice choose_template(const template_sources& sources);

}  // namespace anchorage
