#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/text/tokenizer/utf8_stream.hpp"

using namespace anchorage;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(static_cast<unsigned char>(v)));
  return s;
}

const std::string fffd = "\xEF\xBF\xBD";

// Pushes each chunk, then flushes; returns what came out of each call (the flush last).
std::vector<std::string> stream(const std::vector<std::string>& chunks, utf8_stream& s) {
  std::vector<std::string> out;
  for (const auto& c : chunks) out.push_back(s.push(c));
  out.push_back(s.flush());
  return out;
}

}  // namespace

TEST_CASE("utf8_stream: a 4-byte emoji split across four tokens comes out whole at the last byte",
          "[bpe][utf8]") {
  utf8_stream s;
  const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600
  const auto out =
      stream({emoji.substr(0, 1), emoji.substr(1, 1), emoji.substr(2, 1), emoji.substr(3, 1)}, s);
  CHECK(out == std::vector<std::string>{"", "", "", emoji, ""});
  CHECK(s.replacements() == 0);
  CHECK(s.pending() == 0);
}

TEST_CASE("utf8_stream: held bytes are counted and released", "[bpe][utf8]") {
  utf8_stream s;
  CHECK(s.push("ab\xE2\x82") == "ab");
  CHECK(s.pending() == 2);
  CHECK(s.push("\xAC!") == "\xE2\x82\xAC!");  // the euro sign completed
  CHECK(s.pending() == 0);
  CHECK(s.replacements() == 0);
}

TEST_CASE("utf8_stream: invalid sequences become U+FFFD per maximal subpart", "[bpe][utf8]") {
  struct example {
    const char* what;
    std::string input;
    std::string expected;
  };
  const std::vector<example> examples = {
      {"lone continuation byte", bytes({'a', 0x80, 'b'}), "a" + fffd + "b"},
      {"two continuation bytes", bytes({0xBF, 0x80}), fffd + fffd},
      {"overlong '/' (C0 AF)", bytes({0xC0, 0xAF}), fffd + fffd},
      {"overlong 3-byte (E0 80 AF)", bytes({0xE0, 0x80, 0xAF}), fffd + fffd + fffd},
      {"overlong 4-byte (F0 80 80 AF)", bytes({0xF0, 0x80, 0x80, 0xAF}), fffd + fffd + fffd + fffd},
      {"surrogate U+D800 (ED A0 80)", bytes({0xED, 0xA0, 0x80}), fffd + fffd + fffd},
      {"above U+10FFFF (F4 90 80 80)", bytes({0xF4, 0x90, 0x80, 0x80}), fffd + fffd + fffd + fffd},
      {"F5..FF never start a sequence", bytes({0xF5, 0xFF, 'x'}), fffd + fffd + "x"},
      {"truncated 3-byte then ASCII", bytes({0xE2, 0x82, 'x'}), fffd + "x"},
      {"truncated 4-byte then a valid 2-byte", bytes({0xF0, 0x9F, 0x98, 0xC3, 0xA9}), fffd + "\xC3\xA9"},
      {"truncated lead before another lead", bytes({0xE2, 0xE2, 0x82, 0xAC}), fffd + "\xE2\x82\xAC"},
      {"highest scalar U+10FFFF is valid", bytes({0xF4, 0x8F, 0xBF, 0xBF}), bytes({0xF4, 0x8F, 0xBF, 0xBF})},
      {"U+FFFF is valid", bytes({0xEF, 0xBF, 0xBF}), bytes({0xEF, 0xBF, 0xBF})},
  };
  for (const auto& e : examples) {
    INFO(e.what);
    CHECK(utf8_lossy(e.input) == e.expected);
    // Byte by byte through the stream gives the same text.
    utf8_stream s;
    std::string streamed;
    for (char c : e.input) streamed += s.push(std::string(1, c));
    streamed += s.flush();
    CHECK(streamed == e.expected);
    std::size_t expected_replacements = 0;
    for (std::size_t p = e.expected.find(fffd); p != std::string::npos; p = e.expected.find(fffd, p + 1)) {
      ++expected_replacements;
    }
    CHECK(s.replacements() == expected_replacements);
  }
}

TEST_CASE("utf8_stream: an overlong, a surrogate and a lone continuation byte, byte for byte",
          "[bpe][utf8]") {
  utf8_stream s;
  // C0 is invalid at once (no well-formed sequence starts with it): nothing is held.
  CHECK(s.push(bytes({0xC0})) == fffd);
  CHECK(s.pending() == 0);
  CHECK(s.push(bytes({0xAF})) == fffd);
  // ED is held (it may start U+D000..U+D7FF); A0 proves it a surrogate: ED is one U+FFFD and
  // A0, a continuation byte with no lead, is another.
  CHECK(s.push(bytes({0xED})).empty());
  CHECK(s.pending() == 1);
  CHECK(s.push(bytes({0xA0})) == fffd + fffd);
  CHECK(s.push(bytes({0x80})) == fffd);
  CHECK(s.push("ok") == "ok");
  CHECK(s.flush().empty());
  CHECK(s.replacements() == 5);
}

TEST_CASE("utf8_stream: flush turns a held sequence into one U+FFFD", "[bpe][utf8]") {
  utf8_stream s;
  CHECK(s.push("x\xF0\x9F\x98").size() == 1);
  CHECK(s.pending() == 3);
  CHECK(s.replacements() == 0);
  CHECK(s.flush() == fffd);
  CHECK(s.replacements() == 1);
  CHECK(s.pending() == 0);
  CHECK(s.flush().empty());
}

TEST_CASE("utf8_stream: any split of a byte string streams to utf8_lossy of the whole", "[bpe][utf8]") {
  const std::string text = "a\xC3\xA9" + bytes({0xE2, 0x82}) + "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD" +
                           bytes({0xED, 0xBF, 0xBF, 0x80, 0xF0, 0x90}) + "\xE6\x97\xA5z";
  const std::string whole = utf8_lossy(text);
  for (std::size_t a = 0; a <= text.size(); ++a) {
    for (std::size_t b = a; b <= text.size(); ++b) {
      utf8_stream s;
      std::string out = s.push(text.substr(0, a));  // one statement per call: the order matters
      out += s.push(text.substr(a, b - a));
      out += s.push(text.substr(b));
      out += s.flush();
      INFO("split at " << a << " and " << b);
      REQUIRE(out == whole);
    }
  }
  CHECK(valid_utf8_prefix(whole) == whole.size());
}

TEST_CASE("next_utf8_sequence reports code points and statuses", "[bpe][utf8]") {
  const auto euro = next_utf8_sequence("\xE2\x82\xAC", 0);
  CHECK(euro.status == utf8_status::valid);
  CHECK(euro.length == 3);
  CHECK(euro.code_point == 0x20AC);
  const auto cut = next_utf8_sequence("\xE2\x82", 0);
  CHECK(cut.status == utf8_status::truncated);
  CHECK(cut.length == 2);
  const auto bad = next_utf8_sequence("\xE2\x28", 0);
  CHECK(bad.status == utf8_status::invalid);
  CHECK(bad.length == 1);
  CHECK(valid_utf8_prefix("ab\xC3\xA9\xFF") == 4);
}
