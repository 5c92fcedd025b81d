#include "runtime/text/tokenizer/byte_unicode.hpp"

#include <array>

#include "runtime/text/tokenizer/utf8_stream.hpp"

namespace anchorage {

namespace {

bool stands_for_itself(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

struct byte_maps {
  std::array<char32_t, 256> to_unicode{};
  std::array<int, 324> to_byte{};  // indexed by code point; every mapped code point is < 0x144

  byte_maps() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      const char32_t cp = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
      to_unicode[b] = cp;
      to_byte[cp] = static_cast<int>(b);
    }
  }
};

const byte_maps& maps() {
  static const byte_maps instance;
  return instance;
}

}  // namespace

char32_t byte_to_unicode(std::uint8_t b) { return maps().to_unicode[b]; }

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_unicode(static_cast<std::uint8_t>(c)));
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view text) {
  const auto& to_byte = maps().to_byte;
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const utf8_sequence seq = next_utf8_sequence(text, pos);
    if (seq.status != utf8_status::valid || seq.code_point >= to_byte.size()) return std::nullopt;
    const int b = to_byte[seq.code_point];
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(static_cast<unsigned char>(b)));
    pos += seq.length;
  }
  return out;
}

}  // namespace anchorage
