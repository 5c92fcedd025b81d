#pragma once
// UTF-8 decoding by the "maximal subpart" rule (Unicode §3.9, the WHATWG decoder, Rust's
// String::from_utf8_lossy), and a streaming decoder for generated tokens.
//
// Valid UTF-8 here is RFC 3629: no overlong forms, no encoded surrogates (U+D800..U+DFFF), nothing
// above U+10FFFF. An invalid sequence is replaced by one U+FFFD per maximal subpart: the longest
// prefix of a well-formed sequence that the input holds (so "\xE2\x82" followed by 'x' is one
// U+FFFD, and each of "\xC0\xAF" is its own U+FFFD because 0xC0 starts no well-formed sequence).
#include <cstddef>
#include <string>
#include <string_view>

namespace anchorage {

enum class utf8_status {
  valid,      // a complete well-formed sequence
  invalid,    // a maximal subpart that cannot be completed (one U+FFFD)
  truncated,  // a well-formed prefix cut short by the end of the input
};

struct utf8_sequence {
  std::size_t length;  // bytes consumed, >= 1
  utf8_status status;
  char32_t code_point;  // the scalar value when status == valid, else U+FFFD
};

// The sequence that starts at text[pos]. Precondition: pos < text.size().
utf8_sequence next_utf8_sequence(std::string_view text, std::size_t pos);

// The length of the longest prefix of `text` that is valid UTF-8.
std::size_t valid_utf8_prefix(std::string_view text);

// `text` with every invalid or truncated sequence replaced by U+FFFD (as from_utf8_lossy).
std::string utf8_lossy(std::string_view text);

// Appends the UTF-8 encoding of scalar value `cp` to `out`. Precondition: cp is a scalar value.
void append_utf8(std::string& out, char32_t cp);

// Turns the bytes of generated tokens, pushed one token at a time, into valid UTF-8 text.
//
// push() returns the text completed so far: every complete sequence, U+FFFD for each invalid
// maximal subpart, and holds back a trailing truncated sequence (at most 3 bytes) until the next
// push completes or breaks it. flush() ends the stream: a held sequence becomes one U+FFFD.
// The concatenation of every push() and the final flush() equals utf8_lossy() of the
// concatenated input. Not thread-safe: one stream per generation.
class utf8_stream {
 public:
  std::string push(std::string_view bytes);
  std::string flush();

  // Bytes held back, 0..3.
  std::size_t pending() const { return held_.size(); }
  // U+FFFD characters emitted so far (by push and flush); 0 means the output is the input.
  std::size_t replacements() const { return replacements_; }

 private:
  std::string held_;
  std::size_t replacements_ = 0;
};

}  // namespace anchorage
