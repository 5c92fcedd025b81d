// choose_template: where the server's chat template comes from (the checkpoint, the files beside
// --tokenizer, --chat-template) and the refusal of a template no native renderer matches.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/text/template/template_choice.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::temp_dir;
namespace fs = std::filesystem;

namespace {

std::string real_template(const std::string& name) {
  std::ifstream in(std::string(ANCHORAGE_SOURCE_DIR) + "/tests/support/templates/" + name +
                   "/chat_template.jinja");
  std::ostringstream s;
  s << in.rdbuf();
  REQUIRE_FALSE(s.str().empty());
  return s.str();
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A tokenizer folder: tokenizer.json (never read here) and, when given, the config's template.
std::string tokenizer_folder(const temp_dir& d, const nlohmann::json& config) {
  write(d.path / "tokenizer.json", "{}");
  if (!config.is_null()) write(d.path / "tokenizer_config.json", config.dump());
  return d.file("tokenizer.json");
}

const std::string unknown_template = "{{ messages[0]['content'] }}";

void check_refusal(const template_sources& s, const std::string& file) {
  try {
    choose_template(s);
    FAIL("an unknown template was accepted");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains(file));
    CHECK_THAT(m, Catch::Contains("Qwen3.5") && Catch::Contains("Qwen3"));
    CHECK_THAT(m, Catch::Contains("--chat-template"));
  }
}

}  // namespace

TEST_CASE("choose_template: nothing given is the built-in template", "[template_choice]") {
  const template_choice c = choose_template({});
  CHECK(c.renderer == chat_renderer::builtin);
  CHECK_THAT(c.origin, Catch::Contains("built-in"));
}

TEST_CASE("choose_template: the checkpoint's template, recognised or refused naming its file",
          "[template_choice]") {
  temp_dir d("anchorage-choice");
  template_sources s;
  s.checkpoint_source = d.str();
  s.checkpoint_template = real_template("qwen3.5");
  CHECK(choose_template(s).renderer == chat_renderer::qwen35);
  s.checkpoint_template = real_template("qwen3");
  CHECK(choose_template(s).renderer == chat_renderer::qwen3);
  CHECK(choose_template(s).origin == (d.path / "tokenizer_config.json").string());

  s.checkpoint_template = unknown_template;
  check_refusal(s, (d.path / "tokenizer_config.json").string());
  write(d.path / "chat_template.jinja", unknown_template);  // model_dir reads this one first
  check_refusal(s, (d.path / "chat_template.jinja").string());
  const std::string gguf = d.file("model.gguf");
  write(gguf, "GGUF");
  s.checkpoint_source = gguf;
  check_refusal(s, gguf + " (its tokenizer.chat_template)");

  // The checkpoint's template wins over one beside --tokenizer.
  temp_dir t("anchorage-choice-tok");
  s.tokenizer_path = tokenizer_folder(t, {{"chat_template", real_template("qwen3.5")}});
  s.checkpoint_template = real_template("qwen3");
  CHECK(choose_template(s).renderer == chat_renderer::qwen3);
}

TEST_CASE("choose_template: beside --tokenizer, chat_template.jinja, else tokenizer_config.json",
          "[template_choice]") {
  temp_dir d("anchorage-choice");
  template_sources s;
  s.tokenizer_path = tokenizer_folder(d, {{"chat_template", real_template("qwen3")}});
  template_choice c = choose_template(s);
  CHECK(c.renderer == chat_renderer::qwen3);
  CHECK(c.origin == (d.path / "tokenizer_config.json").string());

  write(d.path / "chat_template.jinja", real_template("qwen3.5"));
  c = choose_template(s);
  CHECK(c.renderer == chat_renderer::qwen35);
  CHECK(c.origin == (d.path / "chat_template.jinja").string());

  write(d.path / "chat_template.jinja", unknown_template);
  check_refusal(s, (d.path / "chat_template.jinja").string());
  fs::remove(d.path / "chat_template.jinja");

  // A list of named templates: the "default" one.
  write(d.path / "tokenizer_config.json",
        nlohmann::json{{"chat_template",
                        {{{"name", "tool_use"}, {"template", unknown_template}},
                         {{"name", "default"}, {"template", real_template("qwen3.5")}}}}}
            .dump());
  CHECK(choose_template(s).renderer == chat_renderer::qwen35);

  write(d.path / "tokenizer_config.json", nlohmann::json{{"chat_template", unknown_template}}.dump());
  check_refusal(s, (d.path / "tokenizer_config.json").string());

  write(d.path / "tokenizer_config.json", nlohmann::json{{"model_max_length", 4096}}.dump());
  CHECK(choose_template(s).renderer == chat_renderer::builtin);
  fs::remove(d.path / "tokenizer_config.json");
  CHECK(choose_template(s).renderer == chat_renderer::builtin);

  write(d.path / "tokenizer_config.json", "{not json");
  CHECK_THROWS_WITH(choose_template(s), Catch::Contains((d.path / "tokenizer_config.json").string()) &&
                                            Catch::Contains("not a JSON object"));
}

TEST_CASE("choose_template: --chat-template forces a renderer or reads a file", "[template_choice]") {
  temp_dir d("anchorage-choice");
  template_sources s;
  s.checkpoint_source = d.str();
  s.checkpoint_template = unknown_template;  // would be refused under auto
  s.flag = "builtin";
  CHECK(choose_template(s).renderer == chat_renderer::builtin);
  s.flag = "qwen3.5";
  CHECK(choose_template(s).renderer == chat_renderer::qwen35);
  s.flag = "qwen3";
  CHECK(choose_template(s).renderer == chat_renderer::qwen3);
  CHECK(choose_template(s).origin == "--chat-template qwen3");
  s.flag = "auto";
  check_refusal(s, (d.path / "tokenizer_config.json").string());

  const std::string file = d.file("mine.jinja");
  write(file, "\n" + real_template("qwen3") + "\n");
  s.flag = file;
  CHECK(choose_template(s).renderer == chat_renderer::qwen3);
  CHECK(choose_template(s).origin == file);
  write(file, unknown_template);
  check_refusal(s, file);
  const std::string config = d.file("tokenizer_config.json");
  write(config, nlohmann::json{{"chat_template", real_template("qwen3.5")}}.dump());
  s.flag = config;
  CHECK(choose_template(s).renderer == chat_renderer::qwen35);

  s.flag = d.file("missing.jinja");
  CHECK_THROWS_WITH(choose_template(s),
                    Catch::Contains(d.file("missing.jinja")) && Catch::Contains("cannot read"));
}
