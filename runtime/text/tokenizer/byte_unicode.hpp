#pragma once
// GPT-2's reversible map between bytes and printable Unicode characters, in which byte-level
// BPE vocabularies and merges are written: the printable bytes '!'..'~', U+00A1..U+00AC and
// U+00AE..U+00FF stand for themselves; the other 68 bytes map, in byte order, to U+0100.. (so
// the space 0x20 is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace anchorage {

// The character that stands for byte `b`.
char32_t byte_to_unicode(std::uint8_t b);

// The UTF-8 text of the characters standing for each byte of `bytes`.
std::string bytes_to_byte_level(std::string_view bytes);

// The bytes a byte-level text stands for, or nullopt when `text` is not valid UTF-8 or holds a
// character outside the map.
std::optional<std::string> byte_level_to_bytes(std::string_view text);

}  // namespace anchorage
