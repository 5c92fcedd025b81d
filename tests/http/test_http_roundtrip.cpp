// Answers that round-trip over HTTP (issue 12's "must show"): a conversation of 6 turns on the raw
// random model, no logit_bias, whose client sends back exactly what it received (content, and
// reasoning_content when there is any). Whatever the model wrote (invalid UTF-8 shown as U+FFFD,
// special tokens the parser drops, whitespace the template trims, tokens a re-tokenisation
// splits otherwise), every follow-up resumes at the end anchor and prefills only the new turn.
#include <string>

#include "tests/support/chat_turns.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

server_config roundtrip_config(const std::string& preset, const std::string& tokenizer_path, int vocab) {
  std::vector<std::string> args = {"--preset", preset};
  if (!tokenizer_path.empty()) {
    args.push_back("--tokenizer");
    args.push_back(tokenizer_path);
  }
  server_config cfg = parse_server_args(args);
  if (vocab > 0) {
    model_config m = cfg.engine.config();
    m.vocab = vocab;
    m.preset = preset + ", vocab " + std::to_string(vocab);
    cfg.model_override = m;
  }
  cfg.admin_token.clear();
  return cfg;
}

// Six turns on a fresh server; every follow-up must resume at the end anchor.
void six_turns(const server_config& cfg, const tokenizer& tok, bool thinking, std::uint64_t seed) {
  http_server s(http_server::from_config{}, cfg);
  json messages = json::array(
      {{{"role", "system"}, {"content", system_prompt}}, {{"role", "user"}, {"content", "Say something."}}});
  for (int turn = 0; turn < 6; ++turn) {
    const json body = {{"model", "anchorage"},
                       {"messages", messages},
                       {"max_tokens", 24},
                       {"temperature", 1.0},
                       {"seed", seed + static_cast<std::uint64_t>(turn)},
                       {"chat_template_kwargs", {{"enable_thinking", thinking}}}};
    const turn_reply t = post_turn(s, body);
    INFO("turn " << turn << " thinking " << thinking << " x_cache " << t.x_cache.dump());
    if (turn > 0) {
      CHECK(t.x_cache["source"] == "end");
      // Only the new turn is read: the pending token, a bridge, the glue and the message.
      const std::string glue = "<|im_end|>\n<|im_start|>user\n" +
                               messages.back()["content"].get<std::string>() +
                               "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
      CHECK(t.x_cache["prefilled_tokens"].get<long>() <=
            static_cast<long>(tok.encode(glue, true).size()) + 4);
    }
    json reply = {{"role", "assistant"}, {"content", t.message.value("content", "")}};
    if (t.message.contains("reasoning_content")) reply["reasoning_content"] = t.message["reasoning_content"];
    messages.push_back(reply);
    messages.push_back({{"role", "user"}, {"content", "Turn " + std::to_string(turn + 2) + ": go on."}});
  }
}

}  // namespace

TEST_CASE("http: six raw turns of the byte tokenizer each resume at the end anchor", "[http][roundtrip]") {
  for (bool thinking : {true, false}) six_turns(roundtrip_config("tiny", "", 0), tokenizer(), thinking, 11);
}

TEST_CASE("http: six raw turns of a BPE on the qwen35 layout each resume at the end anchor",
          "[http][roundtrip]") {
  const std::string path = bpe_fixture("tiny_qwen3.json");
  const tokenizer bpe = tokenizer::from_json_file(path);
  for (bool thinking : {true, false})
    six_turns(roundtrip_config("qwen35-tiny", path, bpe.vocab_size()), bpe, thinking, 21);
}

TEST_CASE("http: six raw turns of Qwen3's tokenizer each resume at the end anchor",
          "[http][roundtrip][bpe]") {
  QWEN3_TOKENIZER_OR_SKIP(qwen3);
  for (bool thinking : {true, false})
    six_turns(roundtrip_config("qwen35-tiny", qwen3_tokenizer_json, 151936), qwen3, thinking, 31);
}
