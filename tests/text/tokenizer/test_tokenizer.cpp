#include <catch2/catch.hpp>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace anchorage;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(static_cast<unsigned char>(v)));
  return s;
}

}  // namespace

TEST_CASE("vocabulary layout", "[tokenizer]") {
  CHECK(vocab_size() == 272);
  CHECK(special_tokens::im_start == 256);
  CHECK(special_tokens::tool_response_close == 265);
  const std::vector<std::string> texts = {"<|im_start|>",    "<|im_end|>",      "<think>",     "</think>",
                                          "<|image_pad|>",   "<|endoftext|>",   "<tool_call>", "</tool_call>",
                                          "<tool_response>", "</tool_response>"};
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const token_id id = 256 + static_cast<token_id>(i);
    CHECK(token_text(id) == texts[i]);
    CHECK(special_id(texts[i]) == id);
    CHECK(is_special(id));
  }
  CHECK_FALSE(special_id("<think").has_value());
  CHECK_FALSE(special_id("").has_value());
  CHECK_FALSE(is_special(0));
  CHECK_FALSE(is_special(255));
  CHECK_FALSE(is_special(266));
  CHECK_FALSE(is_special(-1));
  CHECK_FALSE(is_special(272));
  for (token_id id = 266; id < 272; ++id) CHECK(token_text(id).empty());
  CHECK(token_text('a') == "a");
  CHECK(token_text(0) == std::string(1, '\0'));
}

TEST_CASE("every single byte round-trips as its own id", "[tokenizer]") {
  const tokenizer tok;
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(static_cast<unsigned char>(b)));
    for (bool parse_special : {false, true}) {
      const auto ids = tok.encode(s, parse_special);
      REQUIRE(ids.size() == 1);
      CHECK(ids[0] == b);
      CHECK(tok.decode(ids) == s);
    }
  }
}

TEST_CASE("random byte strings round-trip", "[tokenizer]") {
  const tokenizer tok;
  std::mt19937_64 rng(0x5eed1234abcdULL);
  // Mix uniform bytes with fragments that stress UTF-8 handling and special-token parsing.
  const std::vector<std::string> fragments = {bytes({0xff, 0xfe}),        // never valid in UTF-8
                                              bytes({0x80}),              // lone continuation byte
                                              bytes({0xbf, 0x80}),        // continuation bytes without a lead
                                              bytes({0xe2, 0x82}),        // truncated 3-byte sequence
                                              bytes({0xf0, 0x9f, 0x98}),  // truncated 4-byte sequence
                                              bytes({0xc0, 0xaf}),        // overlong encoding
                                              bytes({0xed, 0xa0, 0x80}),  // UTF-16 surrogate
                                              std::string(3, '\0'),       // NULs
                                              "\xe2\x82\xac",             // valid euro sign
                                              "<think>",
                                              "</think>",
                                              "<|im_start|>",
                                              "<|im_end|>",
                                              "<|im_sta",
                                              "<tool_call>",
                                              "</tool_response>",
                                              "<",
                                              "<|",
                                              "</",
                                              ">"};
  std::uniform_int_distribution<int> byte_dist(0, 255);
  std::uniform_int_distribution<int> len_dist(0, 40);
  std::uniform_int_distribution<std::size_t> frag_dist(0, fragments.size() - 1);
  std::bernoulli_distribution use_fragment(0.3);
  for (int n = 0; n < 5000; ++n) {
    std::string s;
    const int pieces = len_dist(rng);
    for (int p = 0; p < pieces; ++p) {
      if (use_fragment(rng)) {
        s += fragments[frag_dist(rng)];
      } else {
        s.push_back(static_cast<char>(static_cast<unsigned char>(byte_dist(rng))));
      }
    }
    const auto plain = tok.encode(s, false);
    REQUIRE(plain.size() == s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      REQUIRE(plain[i] == static_cast<unsigned char>(s[i]));
    }
    REQUIRE(tok.decode(plain) == s);
    const auto parsed = tok.encode(s, true);
    REQUIRE(parsed.size() <= s.size());
    REQUIRE(tok.decode(parsed) == s);
    REQUIRE(tok.decode(parsed.data(), parsed.size()) == s);
  }
}

TEST_CASE("special strings become ids only with parse_special", "[tokenizer]") {
  const tokenizer tok;
  const std::string s = "<|im_start|>user\nhi<|im_end|>";
  const std::vector<token_id> expected = {special_tokens::im_start, 'u', 's', 'e', 'r', '\n', 'h', 'i',
                                          special_tokens::im_end};
  CHECK(tok.encode(s, true) == expected);

  const auto plain = tok.encode(s, false);
  CHECK(plain.size() == s.size());
  CHECK(plain.front() == '<');
  for (token_id id : plain) CHECK(id < 256);
}

TEST_CASE("adjacent specials and longest match", "[tokenizer]") {
  const tokenizer tok;
  CHECK(tok.encode("<think></think>", true) ==
        std::vector<token_id>{special_tokens::think_open, special_tokens::think_close});
  CHECK(tok.encode("<tool_call></tool_call><tool_response></tool_response>", true) ==
        std::vector<token_id>{special_tokens::tool_call_open, special_tokens::tool_call_close,
                              special_tokens::tool_response_open, special_tokens::tool_response_close});
  // A '<' that does not start a special stays a byte; the special right after it still parses.
  CHECK(tok.encode("<<think>>", true) == std::vector<token_id>{'<', special_tokens::think_open, '>'});
  CHECK(tok.encode("<|endoftext|><|image_pad|>", true) ==
        std::vector<token_id>{special_tokens::endoftext, special_tokens::image_pad});
}

TEST_CASE("partial specials stay bytes", "[tokenizer]") {
  const tokenizer tok;
  const std::string partial = "<|im_sta";
  const auto ids = tok.encode(partial, true);
  REQUIRE(ids.size() == partial.size());
  for (std::size_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == partial[i]);
  CHECK(tok.encode("<think", true).size() == 6);
  CHECK(tok.encode("</think", true).size() == 7);
  CHECK(tok.encode("<tool_call", true).size() == 10);
  // Truncated prefix followed by a complete special.
  CHECK(tok.encode("<|im_<|im_end|>", true) ==
        std::vector<token_id>{'<', '|', 'i', 'm', '_', special_tokens::im_end});
}

TEST_CASE("decode of specials, reserved ids and out-of-range ids", "[tokenizer]") {
  const tokenizer tok;
  CHECK(tok.decode({special_tokens::im_start, 'a', special_tokens::im_end}) == "<|im_start|>a<|im_end|>");
  CHECK(tok.decode({'a', 266, 271, 'b'}) == "ab");
  CHECK(tok.decode(std::vector<token_id>{}).empty());
  CHECK(tok.decode(nullptr, 0).empty());
  CHECK_THROWS_AS(tok.decode({'a', 272}), std::out_of_range);
  CHECK_THROWS_AS(tok.decode({-1}), std::out_of_range);
  CHECK_THROWS_AS(token_text(272), std::out_of_range);
  CHECK_THROWS_AS(token_text(-5), std::out_of_range);
}
