// The tokenizer value type: the byte tokenizer (default-constructed) and a BPE tokenizer from a
// tokenizer.json, through one interface.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer/bpe_tokenizer.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("the default tokenizer is the byte tokenizer", "[tokenizer]") {
  const tokenizer tok;
  CHECK(tok.is_byte_level());
  CHECK(tok.bpe() == nullptr);
  CHECK(tok.vocab_size() == vocab_size());
  const chat_ids& c = tok.ids();
  CHECK(c.im_start == special_tokens::im_start);
  CHECK(c.im_end == special_tokens::im_end);
  CHECK(c.endoftext == special_tokens::endoftext);
  CHECK(c.think_open == special_tokens::think_open);
  CHECK(c.think_close == special_tokens::think_close);
  CHECK(c.tool_call_open == special_tokens::tool_call_open);
  CHECK(c.tool_call_close == special_tokens::tool_call_close);
  CHECK(c.tool_response_open == special_tokens::tool_response_open);
  CHECK(c.tool_response_close == special_tokens::tool_response_close);
  CHECK(c.image_pad == special_tokens::image_pad);
  for (token_id id = -2; id < 275; ++id) {
    INFO("id " << id);
    CHECK(tok.is_defined(id) == (id >= 0 && id < 272));
    CHECK(tok.is_special(id) == is_special(id));
    CHECK(tok.is_whitespace(id) == (id == ' ' || id == '\n' || id == '\t' || id == '\r'));
    if (id >= 0 && id < 272) CHECK(tok.token_text(id) == token_text(id));
  }
  REQUIRE(tok.defined_mask());
  CHECK(*tok.defined_mask() == std::vector<bool>(272, true));
  const std::string s = "<|im_start|>user\nh\xC3\xA9<think>";
  CHECK(tok.encode(s, true).size() == 1 + 5 + 3 + 1);
  CHECK(tok.decode(tok.encode(s, true)) == s);
  // Copies share their tables.
  const tokenizer copy = tok;
  CHECK(copy.defined_mask() == tok.defined_mask());
}

TEST_CASE("a BPE tokenizer looks its chat ids up by their text", "[tokenizer][bpe]") {
  const tokenizer tok = tokenizer::from_json_file(bpe_fixture("tiny_qwen3.json"));
  CHECK_FALSE(tok.is_byte_level());
  REQUIRE(tok.bpe() != nullptr);
  CHECK(tok.name() == bpe_fixture("tiny_qwen3.json"));
  CHECK(tok.vocab_size() == 305);
  const chat_ids& c = tok.ids();
  CHECK(c.endoftext == 300);
  CHECK(c.im_start == 301);
  CHECK(c.im_end == 302);
  CHECK(c.think_open == 303);
  CHECK(c.think_close == 304);
  // Absent from the file: never equal to a real id.
  CHECK(c.tool_call_open == no_token);
  CHECK(c.tool_call_close == no_token);
  CHECK(c.tool_response_open == no_token);
  CHECK(c.tool_response_close == no_token);
  CHECK(c.image_pad == no_token);
  // The vocabulary has 267 ids, then holes up to the added tokens at 300.
  CHECK(tok.is_defined(0));
  CHECK(tok.is_defined(266));
  CHECK_FALSE(tok.is_defined(267));
  CHECK_FALSE(tok.is_defined(299));
  CHECK(tok.is_defined(304));
  CHECK_FALSE(tok.is_defined(305));
  CHECK_FALSE(tok.is_defined(-1));
  const auto& mask = *tok.defined_mask();
  REQUIRE(mask.size() == 305);
  for (token_id id = 0; id < 305; ++id) CHECK(mask[static_cast<std::size_t>(id)] == tok.is_defined(id));
  // Every added token is special here, <think> (special=false in the file) included.
  CHECK(tok.is_special(301));
  CHECK(tok.is_special(303));
  CHECK_FALSE(tok.bpe()->is_special(303));
  CHECK_FALSE(tok.is_special('a'));
  CHECK_FALSE(tok.is_special(280));
  CHECK(tok.special_id("<think>") == 303);
  CHECK_FALSE(tok.special_id("<tool_call>").has_value());
  CHECK(tok.token_text(302) == "<|im_end|>");
  CHECK_THROWS_AS(tok.token_text(280), std::out_of_range);
  CHECK(tok.is_whitespace(' '));
  CHECK(tok.is_whitespace('\n'));
  CHECK_FALSE(tok.is_whitespace('a'));
  CHECK_FALSE(tok.is_whitespace(301));
  CHECK_FALSE(tok.is_whitespace(280));
  // encode/decode are the BPE's.
  const std::string s = "<|im_start|>user\nhello there<|im_end|>";
  CHECK(tok.encode(s, true) == tok.bpe()->encode(s, true));
  CHECK(tok.encode(s, false) == tok.bpe()->encode(s, false));
  CHECK(tok.encode(s, true).front() == 301);
  CHECK(tok.decode(tok.encode(s, true)) == s);
  CHECK_THROWS_AS(tok.decode({'a', 280}), std::out_of_range);
}

TEST_CASE("a BPE tokenizer from a parsed document equals the one from its file", "[tokenizer][bpe]") {
  std::ifstream in(bpe_fixture("tiny_qwen3.json"));
  const nlohmann::json doc = nlohmann::json::parse(in);
  const tokenizer a = tokenizer::from_json(doc, "checkpoint/tokenizer.json");
  const tokenizer b = tokenizer::from_json_file(bpe_fixture("tiny_qwen3.json"));
  CHECK(a.name() == "checkpoint/tokenizer.json");
  CHECK(a.vocab_size() == b.vocab_size());
  CHECK(a.ids().im_end == b.ids().im_end);
  const std::string s = "a b c <think>x</think> done";
  CHECK(a.encode(s, true) == b.encode(s, true));
  CHECK(*a.defined_mask() == *b.defined_mask());
}

TEST_CASE("a BPE tokenizer without <|im_start|> or <|im_end|> is refused", "[tokenizer][bpe]") {
  // gpt2_style has <|im_start|> but no <|im_end|>.
  const std::string path = bpe_fixture("gpt2_style.json");
  try {
    (void)tokenizer::from_json_file(path);
    FAIL("loaded without <|im_end|>");
  } catch (const tokenizer_file_error& e) {
    CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("<|im_end|>"));
  }
  std::ifstream in(bpe_fixture("tiny_qwen3.json"));
  nlohmann::json doc = nlohmann::json::parse(in);
  auto& added = doc["added_tokens"];
  for (auto it = added.begin(); it != added.end(); ++it) {
    if ((*it)["content"] == "<|im_start|>") {
      added.erase(it);
      break;
    }
  }
  try {
    (void)tokenizer::from_json(doc, "no_im_start.json");
    FAIL("loaded without <|im_start|>");
  } catch (const tokenizer_file_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("no_im_start.json") && Catch::Contains("<|im_start|>"));
  }
  CHECK_THROWS_AS(tokenizer::from_json_file(bpe_fixture("no_such_file.json")), tokenizer_file_error);
}

TEST_CASE("Qwen3's tokenizer.json: the chat ids and the vocabulary", "[tokenizer][bpe]") {
  QWEN3_TOKENIZER_OR_SKIP(tok);
  // Ids as the file's added_tokens list them (checked against the file, not against this code).
  std::ifstream in(qwen3_tokenizer_json);
  const nlohmann::json doc = nlohmann::json::parse(in);
  const auto id_of = [&](const std::string& text) {
    for (const auto& a : doc["added_tokens"])
      if (a["content"] == text) return a["id"].get<token_id>();
    return no_token;
  };
  const chat_ids& c = tok.ids();
  CHECK(c.im_start == id_of("<|im_start|>"));
  CHECK(c.im_end == id_of("<|im_end|>"));
  CHECK(c.endoftext == id_of("<|endoftext|>"));
  CHECK(c.think_open == id_of("<think>"));
  CHECK(c.think_close == id_of("</think>"));
  CHECK(c.tool_call_open == id_of("<tool_call>"));
  CHECK(c.tool_call_close == id_of("</tool_call>"));
  CHECK(c.tool_response_open == id_of("<tool_response>"));
  CHECK(c.tool_response_close == id_of("</tool_response>"));
  CHECK(c.image_pad == id_of("<|image_pad|>"));
  CHECK(c.im_start == 151644);
  CHECK(tok.vocab_size() == 151669);
  CHECK(std::count(tok.defined_mask()->begin(), tok.defined_mask()->end(), true) == 151669);
  const std::string prompt = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n";
  CHECK(tok.encode(prompt, true).size() < prompt.size() / 2);
}
