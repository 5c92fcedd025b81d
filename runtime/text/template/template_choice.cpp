#include "runtime/text/template/template_choice.hpp"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/text/template/template_kind.hpp"

namespace anchorage {

namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// tokenizer_config.json's chat_template: a string, or a list of {name, template} (the "default"
// one); nullopt when the file has none.
std::optional<std::string> config_template(const fs::path& path, const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw std::invalid_argument(path.string() + " is not a JSON object, so its chat_template cannot be read");
  const auto it = j.find("chat_template");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& t : *it)
      if (t.is_object() && t.value("name", "") == "default" && t.contains("template") &&
          t["template"].is_string())
        return t["template"].get<std::string>();
  }
  throw std::invalid_argument(path.string() +
                              ": chat_template must be a string or a list holding a \"default\" template");
}

std::optional<chat_renderer> renderer_of(template_kind k) {
  switch (k) {
    case template_kind::qwen35:
      return chat_renderer::qwen35;
    case template_kind::qwen3:
      return chat_renderer::qwen3;
    case template_kind::unknown:
      break;
  }
  return std::nullopt;
}

// The renderer for the template `text` found in `origin`, or the refusal naming it.
template_choice recognised(const std::string& text, const std::string& origin) {
  if (auto r = renderer_of(recognize_template(text))) return {*r, origin};
  throw std::invalid_argument(
      "the chat template of " + origin +
      " is not one Anchorage renders natively: the supported templates are Qwen3.5's and Qwen3's, "
      "recognised by their exact text (tests/support/templates/); start with --chat-template "
      "builtin|qwen3.5|qwen3 to force a renderer, or --chat-template PATH.jinja to read another file");
}

// The file a checkpoint's template was read from, as model_dir reads it (chat_template.jinja
// wins over tokenizer_config.json), or the GGUF file's key.
std::string checkpoint_origin(const std::string& source) {
  const fs::path p(source);
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return source + " (its tokenizer.chat_template)";
  if (fs::exists(p / "chat_template.jinja", ec)) return (p / "chat_template.jinja").string();
  return (p / "tokenizer_config.json").string();
}

template_choice from_file(const std::string& path) {
  const std::optional<std::string> text = read_text(path);
  if (!text)
    throw std::invalid_argument("--chat-template: cannot read '" + path +
                                "' (expected auto, builtin, qwen3.5, qwen3 or a template file)");
  if (fs::path(path).extension() == ".json") {
    const std::optional<std::string> t = config_template(path, *text);
    if (!t) throw std::invalid_argument("--chat-template: " + path + " has no chat_template");
    return recognised(*t, path);
  }
  return recognised(*text, path);
}

// --tokenizer FILE: a template in FILE's folder.
std::optional<template_choice> beside_tokenizer(const std::string& tokenizer_path) {
  const fs::path dir = fs::path(tokenizer_path).parent_path();
  const fs::path jinja = dir / "chat_template.jinja";
  if (auto text = read_text(jinja)) return recognised(*text, jinja.string());
  const fs::path config = dir / "tokenizer_config.json";
  if (auto text = read_text(config)) {
    if (auto t = config_template(config, *text)) return recognised(*t, config.string());
  }
  return std::nullopt;
}

}  // namespace

template_choice choose_template(const template_sources& s) {
  if (s.flag == "builtin") return {chat_renderer::builtin, "--chat-template builtin"};
  if (s.flag == "qwen3.5") return {chat_renderer::qwen35, "--chat-template qwen3.5"};
  if (s.flag == "qwen3") return {chat_renderer::qwen3, "--chat-template qwen3"};
  if (s.flag != "auto" && !s.flag.empty()) return from_file(s.flag);
  if (!s.checkpoint_template.empty())
    return recognised(s.checkpoint_template, checkpoint_origin(s.checkpoint_source));
  if (!s.tokenizer_path.empty()) {
    if (auto c = beside_tokenizer(s.tokenizer_path)) return *c;
  }
  return {chat_renderer::builtin,
          "the built-in template (no chat template came with the model or tokenizer)"};
}

}  // namespace anchorage
