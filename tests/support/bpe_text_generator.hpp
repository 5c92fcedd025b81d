#pragma once
// Deterministic test strings for the byte-level BPE tokenizer: code, prose, scripts of many
// languages, emoji sequences, combining marks (decomposed letters, so NFC matters), white space
// runs, digit runs, punctuation clusters and contractions, mixed. Same seed, same strings, on
// every platform (splitmix64 and no <random> distributions).
//
// Left out on purpose (known divergences between the implementations compared): U+0085 and
// U+FEFF, on which \s differs (PCRE2 with UCP, like Unicode's White_Space, takes U+0085 as white
// space and U+FEFF not; transformers.js the reverse), and code points assigned after Unicode 13
// (utf8proc 2.6's tables).
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/text/tokenizer/utf8_stream.hpp"

namespace anchorage::testing {

class bpe_text_generator {
 public:
  explicit bpe_text_generator(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }

  // One string of 1..max_fragments fragments.
  std::string text(std::size_t max_fragments = 6) {
    std::string out;
    const std::size_t n = 1 + below(max_fragments);
    for (std::size_t i = 0; i < n; ++i) {
      out += fragment();
      if (below(3) == 0) out += pick(separators());
    }
    return out;
  }

  std::string fragment() {
    switch (below(16)) {
      case 0:
        return pick(code());
      case 1:
        return pick(prose());
      case 2:
        return run({{0x4E00, 0x9FA5}}, 1, 12);  // CJK
      case 3:
        return run({{0x3041, 0x3096}, {0x30A1, 0x30FA}, {0x30FC, 0x30FC}}, 1, 10);  // kana and the long mark
      case 4:
        return below(2) ? run({{0xAC00, 0xD7A3}}, 1, 8) : jamo();  // Hangul syllables, or conjoining jamo
      case 5:
        return arabic();
      case 6:
        return devanagari();
      case 7:
        return emoji();
      case 8:
        return decomposed_latin();
      case 9:
        return white_space();
      case 10:
        return digits();
      case 11:
        return punctuation();
      case 12:
        return contraction();
      case 13:
        return run({{0x0391, 0x03A9}, {0x03B1, 0x03C9}, {0x0410, 0x044F}, {0x00C0, 0x00FF}}, 1,
                   9);  // Greek, Cyrillic, Latin-1
      case 14:
        return pick(prose()) + pick(separators()) + pick(code());
      default:
        return pick(special_texts());
    }
  }

  static void append(std::string& out, char32_t cp) { append_utf8(out, cp); }

  // The chat-template and tool texts of Qwen's added tokens, and near misses.
  static const std::vector<std::string>& special_texts() {
    static const std::vector<std::string> v = {"<|im_start|>",
                                               "<|im_end|>",
                                               "<think>",
                                               "</think>",
                                               "<tool_call>",
                                               "</tool_call>",
                                               "<|endoftext|>",
                                               "<tool_response>",
                                               "</tool_response>",
                                               "<|im_start|>assistant\n",
                                               "<|im_sta",
                                               "<think",
                                               "</think",
                                               "<|",
                                               "|>",
                                               "<|fim_prefix|>",
                                               "<|vision_start|>",
                                               "<<|im_end|>>",
                                               "<|im_end|><|im_start|>"};
    return v;
  }

 private:
  struct range {
    char32_t first, last;
  };

  std::string run(const std::vector<range>& ranges, std::size_t min_len, std::size_t max_len) {
    std::string out;
    const std::size_t n = min_len + below(max_len - min_len + 1);
    for (std::size_t i = 0; i < n; ++i) {
      const range& r = pick(ranges);
      append(out, r.first + static_cast<char32_t>(below(r.last - r.first + 1)));
    }
    return out;
  }

  std::string jamo() {  // leading + vowel (+ trailing) consonants, which NFC composes into syllables
    std::string out;
    for (std::size_t i = 0, n = 1 + below(4); i < n; ++i) {
      append(out, 0x1100 + static_cast<char32_t>(below(19)));
      append(out, 0x1161 + static_cast<char32_t>(below(21)));
      if (below(2)) append(out, 0x11A8 + static_cast<char32_t>(below(27)));
    }
    return out;
  }

  std::string arabic() {  // letters with optional harakat (marks)
    std::string out;
    for (std::size_t i = 0, n = 2 + below(8); i < n; ++i) {
      append(out, 0x0621 + static_cast<char32_t>(below(0x064A - 0x0621 + 1)));
      if (below(3) == 0) append(out, 0x064B + static_cast<char32_t>(below(8)));
      if (below(6) == 0) out += " ";
    }
    return out;
  }

  std::string devanagari() {  // consonants with vowel signs and viramas (marks), and the danda
    std::string out;
    for (std::size_t i = 0, n = 2 + below(7); i < n; ++i) {
      append(out, 0x0915 + static_cast<char32_t>(below(0x0939 - 0x0915 + 1)));
      if (below(2)) append(out, 0x093E + static_cast<char32_t>(below(0x094D - 0x093E + 1)));
      if (below(8) == 0) append(out, 0x0902);
    }
    if (below(3) == 0) append(out, 0x0964);
    return out;
  }

  std::string emoji() {
    static const std::vector<std::string> v = {
        "\U0001F600",
        "\U0001F44D",
        "\U0001F44D\U0001F3FD",
        "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",
        "\U0001F469\U0001F3FE\u200D\U0001F4BB",
        "\U0001F3F3\uFE0F\u200D\U0001F308",
        "\U0001F1FA\U0001F1F8",
        "\U0001F1EF\U0001F1F5\U0001F1E9\U0001F1EA",
        "\u2764\uFE0F",
        "1\uFE0F\u20E3",
        "\U0001F9D1\u200D\U0001F680",
        "\u270C\U0001F3FB",
        "\U0001F525\U0001F525\U0001F525",
        "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F",
        "\u2603",
        "\U0001F937\u200D\u2642\uFE0F"};
    std::string out = pick(v);
    if (below(2)) out += pick(v);
    return out;
  }

  std::string decomposed_latin() {
    static const std::vector<std::string> bases = {"e", "a", "o", "u", "n", "c",
                                                   "E", "A", "i", "q", "z", "s"};
    std::string out;
    for (std::size_t i = 0, n = 1 + below(6); i < n; ++i) {
      out += pick(bases);
      // acute, grave, circumflex, tilde, diaeresis, ring, cedilla, dot below, dot above, caron
      static const std::vector<char32_t> marks = {0x0301, 0x0300, 0x0302, 0x0303, 0x0308,
                                                  0x030A, 0x0327, 0x0323, 0x0307, 0x030C};
      for (std::size_t m = 0, k = below(3); m < k; ++m) append(out, pick(marks));
    }
    return out;
  }

  std::string white_space() {
    static const std::vector<std::string> v = {" ",    "  ",     "\t",     "\n",     "\r\n", "\n\n", " \n",
                                               "\t\t", "\u00A0", "\u3000", "\u2003", "\r",   "    "};
    std::string out;
    for (std::size_t i = 0, n = 1 + below(6); i < n; ++i) out += pick(v);
    if (below(2)) out += "x";
    return out;
  }

  std::string digits() {
    std::string out = below(4) == 0 ? "-" : "";
    for (std::size_t i = 0, n = 1 + below(40); i < n; ++i) out.push_back(static_cast<char>('0' + below(10)));
    if (below(3) == 0)
      out += pick(std::vector<std::string>{".5", ",000", "%", " km", "\u0663\u0664", "\uFF11\uFF12"});
    return out;
  }

  std::string punctuation() {
    static const std::vector<std::string> v = {
        "!!!", "?!",     "...",          "---",          "```",    "==>",     "{{", "}}", "();",
        "\"'", "\u2014", "\u00AB\u00BB", "\u3002\u3001", "\uFF01", "@#$%^&*", "//", "/*", "*/",
        "||",  "&&",     "::",           "->",           "=>",     "\\n",     "[]", "<>"};
    std::string out;
    for (std::size_t i = 0, n = 1 + below(4); i < n; ++i) out += pick(v);
    return out;
  }

  std::string contraction() {
    static const std::vector<std::string> v = {
        "don't",   "DON'T",   "it's", "IT'S", "we're", "WE'RE",       "you've", "I'm",     "I'M",
        "they'll", "THEY'LL", "he'd", "HE'D", "Don'T", "we'Re",       "'s",     "'S",      "'t",
        "'re",     "'ve",     "'m",   "'ll",  "'d",    "rock'n'roll", "'''",    "O'Neil's"};
    return (below(2) ? " " : "") + pick(v);
  }

  static const std::vector<std::string>& separators() {
    static const std::vector<std::string> v = {" ", "", "\n", ", ", "\t", "  ", "\r\n", ". "};
    return v;
  }

  static const std::vector<std::string>& code() {
    static const std::vector<std::string> v = {
        "def f(x):\n    return x ** 2\n",
        "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
        "const add = (a, b) => a + b;  // arrow",
        "fn main() -> Result<(), Box<dyn Error>> { println!(\"{:?}\", v); Ok(()) }",
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
        "if [ -f \"$FILE\" ]; then\n  echo \"ok\" >&2\nfi",
        "#include <vector>\nstd::vector<std::string> v{\"a\", \"b\"};",
        "{\"key\": [1, 2.5e-3, true, null], \"nested\": {\"x\": \"\\u00e9\"}}",
        "<div class=\"main\"><p>Hello &amp; bye</p></div>",
        "    x = self.layer_norm(x)\r\n        y = torch.matmul(q, k.transpose(-2, -1))",
        "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}",
        "$ git commit -m 'fix: off-by-one' && git push origin HEAD:refs/for/main",
    };
    return v;
  }

  static const std::vector<std::string>& prose() {
    static const std::vector<std::string> v = {
        "The quick brown fox jumps over the lazy dog.",
        "It's a truth universally acknowledged, that a single man in possession of a good fortune...",
        "HELLO WORLD, THIS IS LOUD",
        "naïve café résumé coöperate",
        "Straße, Ærøskøbing, Łódź, İstanbul, ǅemal",
        "我们今天去公园散步，天气非常好。",
        "東京は日本の首都です。カタカナとひらがな。",
        "안녕하세요, 만나서 반갑습니다.",
        "مرحبا بالعالم، كيف حالك؟",
        "नमस्ते दुनिया, आप कैसे हैं?",
        "Привет, мир! Как дела?",
        "Γειά σου κόσμε",
        "ภาษาไทยไม่มีช่องว่าง",
        "שלום עולם",
    };
    return v;
  }

  std::uint64_t state_;
};

}  // namespace anchorage::testing
