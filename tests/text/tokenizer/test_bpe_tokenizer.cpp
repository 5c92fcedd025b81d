// The byte-level BPE tokenizer on the hand-made fixtures of tests/support/bpe_fixtures (see
// make_fixtures.py there: byte b has id b, merged tokens start at 256 in merge order, added
// tokens at 300).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer/bpe_tokenizer.hpp"
#include "runtime/text/tokenizer/split_regex.hpp"
#include "tests/support/bpe_text_generator.hpp"

using namespace anchorage;

namespace {

const std::string fixtures = std::string(ANCHORAGE_SOURCE_DIR) + "/tests/support/bpe_fixtures/";

bpe_tokenizer load(const char* name) { return bpe_tokenizer::from_file(fixtures + name); }

std::vector<token_id> bytes_of(std::string_view s) {
  std::vector<token_id> ids;
  for (char c : s) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::vector<token_id> concat(std::initializer_list<std::vector<token_id>> parts) {
  std::vector<token_id> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST_CASE("bpe: merges apply by rank, not left to right", "[bpe]") {
  const auto tok = load("tiny_qwen3.json");
  // "b c" (256) outranks "a b" (257): abc is a + bc, never ab + c -> "abc" (264).
  CHECK(tok.encode("abc", false) == std::vector<token_id>{'a', 256});
  CHECK(tok.encode("ab", false) == std::vector<token_id>{257});
  CHECK(tok.encode("abcab", false) == std::vector<token_id>{'a', 256, 257});
  // he (259) + ll (260) -> hell (261) -> hello (262); the Qwen pattern keeps the space in front.
  CHECK(tok.encode("hello", false) == std::vector<token_id>{262});
  CHECK(tok.encode(" hello", false) == std::vector<token_id>{263});
  CHECK(tok.encode("Hello", false) == std::vector<token_id>{'H', 'e', 260, 'o'});
  CHECK(tok.encode("hello hello", false) == std::vector<token_id>{262, 263});
  CHECK(tok.encode("", false).empty());
  for (const char* s : {"abc", "abcab", " hello", "Hello", "hello hello"})
    CHECK(tok.decode(tok.encode(s, false)) == s);
}

TEST_CASE("bpe: merges given as [a, b] arrays load like \"a b\" strings", "[bpe]") {
  const auto strings = load("tiny_qwen3.json");
  const auto arrays = load("tiny_qwen35.json");
  for (const char* s : {"abcab hello", " hello", "\xC3\xA9t"})
    CHECK(strings.encode(s, false) == arrays.encode(s, false));
}

TEST_CASE("bpe: NFC is applied before merging", "[bpe]") {
  const auto tok = load("tiny_qwen3.json");
  // 'é' is two bytes, merged (265), then "ét" (266); the decomposed e + U+0301 composes first.
  CHECK(tok.encode("\xC3\xA9t", false) == std::vector<token_id>{266});
  CHECK(tok.encode("e\xCC\x81t", false) == std::vector<token_id>{266});
  CHECK(tok.decode(tok.encode("e\xCC\x81t", false)) == "\xC3\xA9t");
  // gpt2_style.json has no merges for 'é' in front of nothing, and ignore_merges.json no normalizer.
  const auto raw = load("ignore_merges.json");
  CHECK(raw.decode(raw.encode("e\xCC\x81", false)) == "e\xCC\x81");
}

TEST_CASE("bpe: ignore_merges takes a word that is in the vocabulary whole", "[bpe]") {
  const auto tok = load("ignore_merges.json");
  // Merges x y (256), y z (257), x yz (258 "xyz"): by merges xyz would be xy + z.
  CHECK(tok.encode("xyz", false) == std::vector<token_id>{258});
  CHECK(tok.encode("xyzx", false) == std::vector<token_id>{256, 'z', 'x'});
  CHECK(tok.encode("yz", false) == std::vector<token_id>{257});
}

TEST_CASE("bpe: added tokens are split out with parse_special and not without", "[bpe]") {
  const auto tok = load("tiny_qwen3.json");
  const std::string chat = "<|im_start|>user\nhi<|im_end|>";
  CHECK(tok.encode(chat, true) == concat({{301}, bytes_of("user"), {'\n'}, bytes_of("hi"), {302}}));
  const auto plain = tok.encode(chat, false);
  for (token_id id : plain) CHECK(id < 256);
  CHECK(tok.decode(plain) == chat);
  CHECK(tok.decode(tok.encode(chat, true)) == chat);
  // A near miss is text either way.
  CHECK(tok.encode("<|im_sta", true) == tok.encode("<|im_sta", false));
  // non_special: Qwen3's <think> is an added token with special=false, matched as HF's
  // split_special_tokens=True and llama.cpp's parse_special=false would.
  const std::string think = "<think>x</think><|im_end|>";
  CHECK(tok.encode(think, added_token_matching::non_special) ==
        concat({{303, 'x', 304}, bytes_of("<|im_end|>")}));
  CHECK(tok.encode(think, added_token_matching::all) == std::vector<token_id>{303, 'x', 304, 302});
  CHECK(tok.encode(think, added_token_matching::none) == bytes_of(think));
}

TEST_CASE(
    "bpe: the longest added token wins, lstrip/rstrip eat white space, normalized tokens match NFC text",
    "[bpe]") {
  const auto tok = load("gpt2_style.json");  // ByteLevel(add_prefix_space, use_regex), NFC
  CHECK(tok.encode("<|im_start|>assistant", true) == std::vector<token_id>{302});
  CHECK(tok.encode("<|im_start|>user", true) == concat({{301}, bytes_of(" user")}));
  // <mask> strips the white space on both sides; each remaining section gets the prefix space,
  // and " a" is a merge (258).
  CHECK(tok.encode("a <mask>  b", true) == concat({{258, 300}, bytes_of(" b")}));
  const auto plain = tok.encode("a <mask>  b", false);
  CHECK(std::find(plain.begin(), plain.end(), 300) == plain.end());
  CHECK(tok.decode(plain) == " a <mask>  b");  // ByteLevel's prefix space, and no stripping
  // "[e\u0301]" is normalized=true: it matches the NFC text whether the input is NFC or not.
  CHECK(tok.encode("x[\xC3\xA9]", true) == concat({bytes_of(" x"), {303}}));
  CHECK(tok.encode("x[e\xCC\x81]", true) == concat({bytes_of(" x"), {303}}));
  CHECK(tok.token_bytes(303) == "[e\xCC\x81]");
}

TEST_CASE("bpe: ByteLevel's own regex and prefix space", "[bpe]") {
  const auto tok = load("gpt2_style.json");
  // GPT-2's pattern: " ?\p{L}+" keeps the space with the word; the prefix space is added once per
  // section, before the split; " hello" is a merge (263).
  CHECK(tok.encode("hello hello", false) == std::vector<token_id>{263, 263});
  CHECK(tok.encode(" hello", false) == std::vector<token_id>{263});
  CHECK(tok.encode("x2024", false) == concat({bytes_of(" x"), bytes_of("2024")}));
  CHECK(tok.decode(tok.encode("hello", false)) == " hello");
}

TEST_CASE("bpe: the Qwen3.5 pattern keeps combining marks in the letter run, the Qwen3 one splits them",
          "[bpe]") {
  const auto pattern_of = [](const char* name) {
    std::ifstream in(fixtures + name);
    const auto j = nlohmann::json::parse(in);
    return j.at("pre_tokenizer").at("pretokenizers").at(0).at("pattern").at("Regex").get<std::string>();
  };
  const split_regex qwen3(pattern_of("tiny_qwen3.json"), split_regex::syntax::regex);
  const split_regex qwen35(pattern_of("tiny_qwen35.json"), split_regex::syntax::regex);
  CHECK(qwen35.pattern().find("[\\p{L}\\p{M}]+") != std::string::npos);
  const auto split = [](const split_regex& r, std::string_view text) {
    std::vector<std::string_view> out;
    r.split_isolated(text, out);
    return std::vector<std::string>(out.begin(), out.end());
  };
  using pieces = std::vector<std::string>;
  // Devanagari: न म स ् त े, where ् (virama) and े (vowel sign) are marks.
  const std::string namaste = "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87";
  CHECK(split(qwen35, namaste) == pieces{namaste});
  CHECK(split(qwen3, namaste) == pieces{namaste.substr(0, 9), namaste.substr(9, 6), namaste.substr(15)});
  // A decomposed letter: "cafe" + U+0301.
  CHECK(split(qwen35, " cafe\xCC\x81!") == pieces{" cafe\xCC\x81", "!"});
  CHECK(split(qwen3, " cafe\xCC\x81!") == pieces{" cafe", "\xCC\x81!"});
  // Shared behaviour: (?i:) contractions, one digit per piece, \s+(?!\S) leaving the last space.
  for (const split_regex* r : {&qwen3, &qwen35}) {
    CHECK(split(*r, "DON'T it'S") == pieces{"DON", "'T", " it", "'S"});
    CHECK(split(*r, "x2024") == pieces{"x", "2", "0", "2", "4"});
    CHECK(split(*r, "a   b\r\n\r\nc") == pieces{"a", "  ", " b", "\r\n\r\n", "c"});
    CHECK(split(*r, "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x81") ==
          pieces{"\xE4\xBD\xA0\xE5\xA5\xBD", "\xEF\xBC\x81"});
  }
  CHECK(qwen3.jit() == qwen35.jit());
  CHECK_NOTHROW(load("tiny_qwen35.json"));
}

TEST_CASE(
    "bpe: the white space class in UCP mode is Unicode white space: U+0085 and U+2003 are, U+FEFF is not",
    "[bpe]") {
  // The one place PCRE2 departs from transformers.js (whose \s has U+FEFF and lacks U+0085).
  const split_regex spaces("\\s+", split_regex::syntax::regex);
  std::vector<std::string_view> out;
  spaces.split_isolated("x\xC2\x85\xE2\x80\x83y\xEF\xBB\xBFz", out);
  CHECK(out == std::vector<std::string_view>{"x", "\xC2\x85\xE2\x80\x83", "y\xEF\xBB\xBFz"});
}

TEST_CASE("bpe: ids, specials and bytes", "[bpe]") {
  const auto tok = load("tiny_qwen3.json");
  CHECK(tok.vocab_size() == 305);  // 0..266 merges, a hole, 300..304 added
  CHECK(tok.is_defined(0));
  CHECK(tok.is_defined(266));
  CHECK_FALSE(tok.is_defined(267));
  CHECK_FALSE(tok.is_defined(299));
  CHECK(tok.is_defined(300));
  CHECK_FALSE(tok.is_defined(305));
  CHECK_FALSE(tok.is_defined(-1));
  CHECK(tok.is_special(301));
  CHECK_FALSE(tok.is_special(303));  // <think>: added, not special
  CHECK_FALSE(tok.is_special(97));
  CHECK(tok.special_id("<think>") == 303);
  CHECK(tok.special_id("<|im_end|>") == 302);
  CHECK_FALSE(tok.special_id("<think").has_value());
  CHECK(tok.token_bytes(263) == " hello");
  CHECK(tok.token_bytes(' ') == " ");
  CHECK(tok.token_bytes(301) == "<|im_start|>");
  CHECK_THROWS_AS(tok.token_bytes(267), std::out_of_range);
  CHECK(tok.decode({301, 263, 302}) == "<|im_start|> hello<|im_end|>");
  try {
    tok.decode({97, 270});
    FAIL("decode accepted an undefined id");
  } catch (const std::out_of_range& e) {
    CHECK_THAT(e.what(), Catch::Contains("id 270") && Catch::Contains("position 1"));
  }
}

TEST_CASE("bpe: invalid UTF-8 is encoded byte-level and round-trips", "[bpe]") {
  const auto tok = load("tiny_qwen3.json");
  // The invalid byte is a pre-token of its own; the text around it is split as usual.
  CHECK(tok.encode("ab\xFF"
                   "abc",
                   false) == std::vector<token_id>{257, 0xFF, 'a', 256});
  CHECK(tok.encode("hello\xE2\x82", false) == std::vector<token_id>{262, 0xE2, 0x82});
  CHECK(tok.encode("\xC0\xAF hello", false) == std::vector<token_id>{0xC0, 0xAF, 263});
  // Random byte strings (ASCII and broken sequences, which NFC leaves alone) round-trip.
  anchorage::testing::bpe_text_generator gen(3);
  const std::vector<std::string> bits = {
      "\xFF",   "\x80", "\xC3",       "\xE2\x82",           "\xF0\x9F\x98", "\xED\xA0\x80", "\xC0\xAF", "ab",
      " hello", "\n",   "<|im_end|>", std::string(1, '\0'), "'s",           "12",           "\xC3\xA9"};
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    for (std::size_t k = 0, n = 1 + gen.below(8); k < n; ++k) s += gen.pick(bits);
    for (bool parse_special : {false, true}) REQUIRE(tok.decode(tok.encode(s, parse_special)) == s);
  }
}

TEST_CASE("bpe: concurrent encodes agree with a serial one", "[bpe]") {
  const auto tok = load("tiny_qwen3.json");
  anchorage::testing::bpe_text_generator gen(11);
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i) texts.push_back(gen.text());
  std::vector<std::vector<token_id>> expected;
  for (const auto& t : texts) expected.push_back(tok.encode(t, true));
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < 5; ++round) {
        for (std::size_t i = 0; i < texts.size(); ++i)
          failures[static_cast<std::size_t>(w)] += tok.encode(texts[i], true) != expected[i];
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == std::vector<int>(4, 0));
}
