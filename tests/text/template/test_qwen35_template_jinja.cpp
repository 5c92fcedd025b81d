// THE CHECK: the native Qwen3.5 and Qwen3 renderers against jinja2 rendering the real templates
// (tests/support/templates/) under Hugging Face's apply_chat_template settings, byte for byte,
// over the conversations in tests/support/template_corpus/. Skips, saying why, only when python3
// or jinja2 is missing.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/text/template/jinja_json.hpp"
#include "runtime/text/template/qwen35_template.hpp"
#include "runtime/text/template/qwen3_template.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::temp_dir;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

const fs::path source_dir = ANCHORAGE_SOURCE_DIR;
const fs::path corpus_dir = source_dir / "tests/support/template_corpus";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool have_jinja2() { return std::system("python3 -c 'import jinja2' >/dev/null 2>&1") == 0; }

// jinja2's renders of the whole corpus: {case: {"text": ...} | {"error": ..., "raised": bool}}.
json render_with_jinja(const std::string& template_name, const fs::path& out_dir) {
  const fs::path out = out_dir / (template_name + ".json");
  const std::string command =
      "python3 '" + (source_dir / "tests/support/render_jinja.py").string() + "' '" +
      (source_dir / "tests/support/templates" / template_name / "chat_template.jinja").string() + "' '" +
      corpus_dir.string() + "' '" + out.string() + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  return json::parse(read_file(out));
}

chat_render_options options_of(const json& c) {
  chat_render_options o;
  const json options = c.value("options", json::object());
  o.add_generation_prompt = options.value("add_generation_prompt", false);  // HF's default
  if (options.contains("enable_thinking")) o.enable_thinking = options["enable_thinking"].get<bool>();
  o.add_vision_id = options.value("add_vision_id", false);
  o.tools = c.value("tools", json());
  return o;
}

// "" when equal; otherwise where they part, with 60 bytes of context from each side.
std::string first_difference(const std::string& expected, const std::string& got) {
  if (expected == got) return "";
  std::size_t i = 0;
  while (i < expected.size() && i < got.size() && expected[i] == got[i]) ++i;
  const std::size_t from = i < 60 ? 0 : i - 60;
  return "first difference at byte " + std::to_string(i) + " (jinja2 " + std::to_string(expected.size()) +
         " bytes, native " + std::to_string(got.size()) + ")\n--- jinja2 from byte " + std::to_string(from) +
         ":\n" + expected.substr(from, 120) + "\n--- native:\n" + got.substr(from, 120);
}

template <typename Render>
void check_corpus(const std::string& template_name, Render render) {
  if (!have_jinja2()) {
    WARN("skipped: python3 with jinja2 is not available to render the reference");
    return;
  }
  temp_dir dir("anchorage-template");
  const json expected = render_with_jinja(template_name, dir.path);
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(corpus_dir)) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().stem().string();
    const json c = json::parse(read_file(entry.path()));
    if (c.contains("templates")) {
      bool listed = false;
      for (const json& t : c["templates"]) listed = listed || t == template_name;
      if (!listed) continue;
    }
    INFO(template_name << " / " << name << ": " << c.value("description", ""));
    REQUIRE(expected.contains(name));
    const json& want = expected[name];
    std::string got;
    std::string error;
    try {
      got = render(c["messages"], options_of(c));
    } catch (const template_error& e) {
      error = e.what();
    }
    if (want.contains("text")) {
      INFO("native error: " << error);
      REQUIRE(error.empty());
      const std::string diff = first_difference(want["text"].get<std::string>(), got);
      INFO(diff);
      CHECK(diff.empty());
    } else {
      INFO("jinja2 error: " << want["error"].get<std::string>());
      REQUIRE_FALSE(error.empty());
      if (want["raised"].get<bool>()) CHECK(error == want["error"].get<std::string>());
    }
    ++compared;
  }
  CHECK(compared >= 30);
}

}  // namespace

TEST_CASE("Qwen3.5 native render equals jinja2's over the corpus", "[template][qwen35]") {
  check_corpus("qwen3.5", render_qwen35);
}

TEST_CASE("Qwen3 native render equals jinja2's over the corpus", "[template][qwen3]") {
  check_corpus("qwen3", render_qwen3);
}
