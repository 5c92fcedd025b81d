#include "runtime/text/tokenizer/utf8_stream.hpp"

namespace anchorage {

namespace {

constexpr char32_t replacement_character = 0xFFFD;

unsigned char byte_at(std::string_view text, std::size_t pos) {
  return static_cast<unsigned char>(text[pos]);
}

}  // namespace

utf8_sequence next_utf8_sequence(std::string_view text, std::size_t pos) {
  const unsigned char lead = byte_at(text, pos);
  if (lead < 0x80) return {1, utf8_status::valid, lead};
  // The length of the sequence and the range its second byte must lie in (Unicode Table 3-7).
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;
  char32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    cp = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    cp = lead & 0x0Fu;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    cp = lead & 0x07u;
    if (lead == 0xF0) low = 0x90;   // no overlong forms
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return {1, utf8_status::invalid, replacement_character};  // 0x80..0xC1, 0xF5..0xFF
  }
  for (std::size_t i = 1; i < length; ++i) {
    if (pos + i >= text.size()) return {i, utf8_status::truncated, replacement_character};
    const unsigned char b = byte_at(text, pos + i);
    const unsigned char lo = i == 1 ? low : 0x80, hi = i == 1 ? high : 0xBF;
    if (b < lo || b > hi) return {i, utf8_status::invalid, replacement_character};
    cp = (cp << 6) | (b & 0x3Fu);
  }
  return {length, utf8_status::valid, cp};
}

std::size_t valid_utf8_prefix(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (byte_at(text, pos) < 0x80) {
      ++pos;
      continue;
    }
    const utf8_sequence seq = next_utf8_sequence(text, pos);
    if (seq.status != utf8_status::valid) break;
    pos += seq.length;
  }
  return pos;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_lossy(std::string_view text) {
  utf8_stream stream;
  std::string out = stream.push(text);
  out += stream.flush();
  return out;
}

std::string utf8_stream::push(std::string_view bytes) {
  std::string input;
  std::string_view text = bytes;
  if (!held_.empty()) {
    input = held_;
    input.append(bytes);
    text = input;
    held_.clear();
  }
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const utf8_sequence seq = next_utf8_sequence(text, pos);
    switch (seq.status) {
      case utf8_status::valid:
        out.append(text.substr(pos, seq.length));
        break;
      case utf8_status::invalid:
        append_utf8(out, replacement_character);
        ++replacements_;
        break;
      case utf8_status::truncated:
        held_.assign(text.substr(pos, seq.length));
        break;
    }
    pos += seq.length;
  }
  return out;
}

std::string utf8_stream::flush() {
  if (held_.empty()) return {};
  held_.clear();
  ++replacements_;
  std::string out;
  append_utf8(out, replacement_character);
  return out;
}

}  // namespace anchorage
