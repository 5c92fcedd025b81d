// End-to-end with --tokenizer: Qwen3's BPE renders and counts the prompt, the answer streams as
// valid UTF-8, and an answer echoed back resumes at the end anchor. The model is the reference
// layout ("tiny") with its vocabulary raised to Qwen3's 151,936 ids (random weights).
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/text/tokenizer/bpe_tokenizer.hpp"
#include "runtime/text/template/chat_template.hpp"
#include "runtime/text/tokenizer/utf8_stream.hpp"
#include "tests/support/chat_turns.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

server_config qwen3_vocab_config() {
  // The built-in template these tests were written against (auto would pick Qwen3's template
  // from the tokenizer_config.json beside the file: tests/http/test_http_template.cpp).
  server_config cfg = parse_server_args(
      {"--preset", "tiny", "--tokenizer", qwen3_tokenizer_json, "--chat-template", "builtin"});
  model_config m = cfg.engine.config();
  m.vocab = 151936;
  cfg.model_override = m;
  cfg.admin_token.clear();
  return cfg;
}

// Words that are one Qwen3 token each, with their leading space, so that any sequence of them
// decodes to text that encodes back to the same ids. Some are not ASCII.
std::vector<token_id> word_ids(const tokenizer& bpe) {
  std::vector<token_id> ids;
  for (const char* w : {" the", " cat", " dog", " and", " sun", " tree", " caf\xC3\xA9",
                        " \xC3\xBC"
                        "ber",
                        " \xC3\xA9t\xC3\xA9"}) {
    const auto one = bpe.encode(w, false);
    INFO("word " << w);
    REQUIRE(one.size() == 1);
    ids.push_back(one.front());
  }
  return ids;
}

json words_only(const std::vector<token_id>& ids) {
  json b = json::object();
  for (token_id id : ids) b[std::to_string(id)] = 100;
  return b;
}

}  // namespace

TEST_CASE("http: --tokenizer counts, streams and resumes with Qwen3's BPE", "[http][tokenizer][bpe]") {
  QWEN3_TOKENIZER_OR_SKIP(qwen3);
  const tokenizer* bpe = &qwen3;
  http_server s(http_server::from_config{}, qwen3_vocab_config());
  const std::vector<token_id> words = word_ids(*bpe);
  json messages = json::array({{{"role", "system"}, {"content", system_prompt}},
                               {{"role", "user"}, {"content", "Write a few words about a caf\xC3\xA9."}}});
  json body = {{"model", "anchorage"},
               {"messages", messages},
               {"max_tokens", 24},
               {"temperature", 0.8},
               {"seed", 5},
               {"logit_bias", words_only(words)},
               {"chat_template_kwargs", {{"enable_thinking", false}}},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  const sse_stream st = s.stream("/v1/chat/completions", body);
  const chat_stream_summary sum = check_chat_stream(st, true);

  // The prompt as the BPE counts it: far fewer tokens than bytes.
  template_options opts;
  opts.enable_thinking = false;
  const std::string rendered = render_chat(to_messages(messages), opts);
  const std::size_t bpe_count = bpe->bpe()->encode(rendered, true).size();
  const long prompt_tokens = sum.usage_chunk["usage"]["prompt_tokens"];
  CHECK(static_cast<std::size_t>(prompt_tokens) == bpe_count);
  CHECK(static_cast<std::size_t>(prompt_tokens) * 3 < tokenizer().encode(rendered, true).size());
  CHECK(sum.usage_chunk["usage"]["completion_tokens"] == 24);
  CHECK(sum.finish_reason == "length");

  // Valid UTF-8 on the wire and in every delta, non-ASCII included, no replacement character.
  CHECK(valid_utf8_prefix(st.raw) == st.raw.size());
  INFO("content: " << sum.content);
  REQUIRE_FALSE(sum.content.empty());
  CHECK(valid_utf8_prefix(sum.content) == sum.content.size());
  CHECK(sum.content.find("\xEF\xBF\xBD") == std::string::npos);
  // Only the biased words were sampled: the text is made of them.
  std::vector<token_id> back = bpe->encode(sum.content, false);
  CHECK(back.size() == 24);
  for (token_id t : back) CHECK(std::find(words.begin(), words.end(), t) != words.end());

  // The answer sent back as received, and a new question: the end anchor serves it, and only
  // the pending token and the glue are prefilled.
  messages.push_back({{"role", "assistant"}, {"content", sum.content}});
  messages.push_back({{"role", "user"}, {"content", "And then?"}});
  json next = body;
  next.erase("stream");
  next.erase("stream_options");
  next["messages"] = messages;
  next["max_tokens"] = 4;
  const turn_reply t = post_turn(s, next);
  CHECK(t.x_cache["source"] == "end");
  const std::string glue =
      "<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n<|im_start|>assistant\n"
      "<think>\n\n</think>\n\n";
  CHECK(t.x_cache["prefilled_tokens"] == 1 + bpe->encode(glue, true).size());
  CHECK(t.usage["prompt_tokens"] ==
        bpe->bpe()->encode(render_chat(to_messages(messages), opts), true).size());
}

TEST_CASE("http: with Qwen3's BPE a client that drops its reasoning resumes at the end anchor",
          "[http][tokenizer][bpe][end]") {
  QWEN3_TOKENIZER_OR_SKIP(qwen3);
  const tokenizer* bpe = &qwen3;
  server_config cfg = qwen3_vocab_config();
  cfg.reasoning_budget = 4;  // the hidden phrase closes the block; the words never do
  http_server s(http_server::from_config{}, cfg);
  json messages = json::array({{{"role", "system"}, {"content", system_prompt}},
                               {{"role", "user"}, {"content", "Think, then answer."}}});
  const json body = {{"model", "anchorage"},
                     {"messages", messages},
                     {"max_tokens", 48},
                     {"temperature", 0.8},
                     {"seed", 9},
                     {"logit_bias", words_only(word_ids(*bpe))}};
  const turn_reply first = post_turn(s, body);
  REQUIRE(first.finish_reason == "length");
  REQUIRE(first.message.value("reasoning_content", "").size() > 0);
  const std::string content = first.message.value("content", "");
  INFO("content: " << content);
  REQUIRE_FALSE(content.empty());
  CHECK(first.message["reasoning_content"].get<std::string>().find("Considering") == std::string::npos);

  // Open WebUI's way: the answer without its reasoning. The template renders an empty block,
  // "<think>\n\n</think>", whose "\n\n" is one token where the prompt had "<think>" "\n".
  messages.push_back({{"role", "assistant"}, {"content", content}});
  messages.push_back({{"role", "user"}, {"content", "Why?"}});
  json next = body;
  next["messages"] = messages;
  next["max_tokens"] = 4;
  const turn_reply t = post_turn(s, next);
  CHECK(t.x_cache["source"] == "end");
  const std::string glue = "<|im_end|>\n<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n<think>\n";
  CHECK(t.x_cache["prefilled_tokens"] == 1 + bpe->encode(glue, true).size());
}

TEST_CASE("http: a tokenizer larger than the engine's vocabulary is refused at start",
          "[http][tokenizer][bpe]") {
  if (!std::filesystem::exists(qwen3_tokenizer_json)) {
    WARN("skipped: " << qwen3_tokenizer_json << " is missing");
    return;
  }
  server_config cfg =
      parse_server_args({"--preset", "tiny", "--port", "0", "--tokenizer", qwen3_tokenizer_json});
  try {
    server srv(cfg);
    FAIL("the server started with a 272-id engine and Qwen3's tokenizer");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(e.what(), Catch::Contains("151669") && Catch::Contains("272"));
  }
}

TEST_CASE("http: --tokenizer with a file that is not a tokenizer is refused at start", "[http][tokenizer]") {
  const std::string path = std::string(ANCHORAGE_SOURCE_DIR) + "/tests/support/no_such_tokenizer.json";
  server_config cfg = parse_server_args({"--preset", "tiny", "--port", "0", "--tokenizer", path});
  CHECK_THROWS_WITH(server(cfg), Catch::Contains(path));
}

TEST_CASE("http: with Qwen3's BPE an answer of newlines alone resumes at the end anchor",
          "[http][tokenizer][bpe][end]") {
  QWEN3_TOKENIZER_OR_SKIP(qwen3);
  // What the random model answers a client through Qwen3's template: newline after newline until
  // max_tokens. The client's copy re-tokenises the template's "\n" after "assistant" together with
  // them (one token of many newlines), so the copy differs from the rows from the prompt's end.
  server_config cfg = qwen3_vocab_config();
  cfg.chat_template = "qwen3";
  http_server s(http_server::from_config{}, cfg);
  const token_id newline = qwen3.encode("\n", false).at(0);
  json messages = json::array({{{"role", "system"}, {"content", system_prompt}},
                               {{"role", "user"}, {"content", "First question whitespace?"}}});
  const json body = {{"model", "anchorage"},
                     {"messages", messages},
                     {"max_tokens", 16},
                     {"temperature", 0},
                     {"logit_bias", {{std::to_string(newline), 100}}}};
  const turn_reply first = post_turn(s, body);
  REQUIRE(first.finish_reason == "length");
  const std::string content = first.message.value("content", "");
  REQUIRE(content == std::string(16, '\n'));
  for (const char* stopped : {"as sent", "then again"}) {
    INFO(stopped);
    messages.push_back({{"role", "assistant"}, {"content", content}});
    messages.push_back({{"role", "user"}, {"content", "Second?"}});
    json next = body;
    next["messages"] = messages;
    const turn_reply t = post_turn(s, next);
    CHECK(t.x_cache["source"] == "end");
    CHECK(t.x_cache["prefilled_tokens"].get<long>() < 16);
    REQUIRE(t.message.value("content", "") == content);
  }
}
