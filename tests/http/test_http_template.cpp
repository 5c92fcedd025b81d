// The chat template over HTTP: a server started with `--tokenizer` of Qwen3's tokenizer.json
// finds Qwen3's template in the tokenizer_config.json beside it and renders prompts with it;
// --chat-template overrides; a template no native renderer matches refuses the start, naming
// its file.
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/text/template/chat_template.hpp"
#include "runtime/text/template/qwen3_template.hpp"
#include "tests/support/http_helpers.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace fs = std::filesystem;

namespace {

// The reference layout ("tiny") with its vocabulary raised to `vocab` ids (random weights).
server_config config_with_vocab(std::vector<std::string> flags, int vocab) {
  flags.insert(flags.begin(), {"--preset", "tiny"});
  server_config cfg = parse_server_args(flags);
  model_config m = cfg.engine.config();
  m.vocab = vocab;
  cfg.model_override = m;
  cfg.admin_token.clear();
  return cfg;
}

// A conversation whose built-in and Qwen3 renderings differ: the earlier assistant turn.
json conversation() {
  return json::array({{{"role", "system"}, {"content", "You are terse."}},
                      {{"role", "user"}, {"content", "Name a colour."}},
                      {{"role", "assistant"}, {"content", "Blue."}},
                      {{"role", "user"}, {"content", "Another one?"}}});
}

long prompt_tokens_of(const http_server& s, bool thinking) {
  const json body = {{"model", "anchorage"},
                     {"messages", conversation()},
                     {"max_tokens", 2},
                     {"temperature", 0},
                     {"chat_template_kwargs", {{"enable_thinking", thinking}}}};
  const http_reply r = s.post_json("/v1/chat/completions", body);
  INFO(r.body.substr(0, 400));
  REQUIRE(r.status == 200);
  return r.body_json()["usage"]["prompt_tokens"].get<long>();
}

void check_refused(const server_config& cfg, const std::string& file) {
  try {
    server srv(cfg);
    FAIL("the server started with an unknown chat template");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(e.what(),
               Catch::Contains(file) && Catch::Contains("--chat-template") && Catch::Contains("Qwen3.5"));
  }
}

}  // namespace

TEST_CASE("http: --tokenizer of Qwen3 renders with the Qwen3 template beside it", "[http][template][bpe]") {
  QWEN3_TOKENIZER_OR_SKIP(qwen3);
  const fs::path config = fs::path(qwen3_tokenizer_json).parent_path() / "tokenizer_config.json";
  if (!fs::exists(config)) {
    WARN("skipped: " << config.string() << " is missing");
    return;
  }
  // --no-cache: the prompt is counted as rendered (a follow-up resumed at an end anchor may count
  // the text it shares with the earlier answer the way that answer was tokenized).
  http_server s(http_server::from_config{},
                config_with_vocab({"--tokenizer", qwen3_tokenizer_json, "--no-cache"}, 151936));
  http_server forced(
      http_server::from_config{},
      config_with_vocab({"--tokenizer", qwen3_tokenizer_json, "--chat-template", "builtin", "--no-cache"},
                        151936));
  for (bool thinking : {true, false}) {
    INFO("thinking " << thinking);
    chat_render_options o;
    o.enable_thinking = thinking;
    const std::string q3 = render_qwen3(nlohmann::ordered_json::parse(conversation().dump()), o);
    template_options b;
    b.enable_thinking = thinking;
    const std::string builtin = render_chat(to_messages(conversation()), b);
    const long q3_count = static_cast<long>(qwen3.encode(q3, true).size());
    const long builtin_count = static_cast<long>(qwen3.encode(builtin, true).size());
    REQUIRE(q3_count != builtin_count);
    CHECK(prompt_tokens_of(s, thinking) == q3_count);
    CHECK(prompt_tokens_of(forced, thinking) == builtin_count);
  }
}

TEST_CASE("http: an unknown chat template refuses the start, naming its file", "[http][template]") {
  temp_dir d("anchorage-http-template");
  const std::string jinja = d.file("custom.jinja");
  std::ofstream(jinja) << "{% for m in messages %}{{ m.content }}{% endfor %}";
  check_refused(parse_server_args({"--preset", "tiny", "--port", "0", "--chat-template", jinja}), jinja);

  // A tokenizer folder whose tokenizer_config.json holds a template of its own.
  fs::copy_file(bpe_fixture("tiny_qwen3.json"), d.path / "tokenizer.json");
  const std::string config = d.file("tokenizer_config.json");
  std::ofstream(config) << json{{"chat_template", "{{ messages[0]['content'] }}"}}.dump();
  server_config cfg = config_with_vocab({"--port", "0", "--tokenizer", d.file("tokenizer.json")}, 512);
  check_refused(cfg, config);

  // --chat-template forces a renderer over it, and the server starts and serves.
  cfg = config_with_vocab({"--tokenizer", d.file("tokenizer.json"), "--chat-template", "qwen3.5"}, 512);
  http_server s(http_server::from_config{}, cfg);
  const http_reply r = s.post_json("/v1/chat/completions", user_chat("hi", 2));
  CHECK(r.status == 200);
}

TEST_CASE("the flag --chat-template: auto by default, any name or path kept, listed in --help",
          "[http][template]") {
  CHECK(parse_server_args({}).chat_template == "auto");
  CHECK(parse_server_args({"--chat-template", "qwen3.5"}).chat_template == "qwen3.5");
  CHECK(parse_server_args({"--chat-template=/t/x.jinja"}).chat_template == "/t/x.jinja");
  CHECK_THROWS_AS(parse_server_args({"--chat-template"}), std::invalid_argument);
  CHECK_THROWS_AS(parse_server_args({"--chat-template="}), std::invalid_argument);
  CHECK_THAT(server_help(), Catch::Contains("--chat-template"));
}
