#pragma once
// Byte-level tokenizer.
//
// Vocabulary layout (vocab_size() == 272):
//   0 .. 255    the bytes 0x00 .. 0xff, one id per byte;
//   256 .. 265  the special tokens, in the order of special_tokens below;
//   266 .. 271  reserved padding: valid ids that decode to nothing and are never produced by encode.
// Round trip: decode(encode(s, p)) == s for every byte string s and either value of p.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

struct special_tokens {
  static constexpr token_id im_start = 256;             // <|im_start|>
  static constexpr token_id im_end = 257;               // <|im_end|>
  static constexpr token_id think_open = 258;           // <think>
  static constexpr token_id think_close = 259;          // </think>
  static constexpr token_id image_pad = 260;            // <|image_pad|>
  static constexpr token_id endoftext = 261;            // <|endoftext|>
  static constexpr token_id tool_call_open = 262;       // <tool_call>
  static constexpr token_id tool_call_close = 263;      // </tool_call>
  static constexpr token_id tool_response_open = 264;   // <tool_response>
  static constexpr token_id tool_response_close = 265;  // </tool_response>

  static constexpr token_id first = 256;           // first special id
  static constexpr int count = 10;                 // number of special ids
  static constexpr token_id first_reserved = 266;  // first reserved (padding) id
};

// Number of ids in the vocabulary, reserved padding included.
constexpr int vocab_size() { return 272; }

// True for the ten special ids (256 .. 265); false for bytes, reserved ids and out-of-range ids.
bool is_special(token_id id);

// The id of a special token given its exact text ("<think>"), or nullopt if `text` is not one.
std::optional<token_id> special_id(std::string_view text);

// The bytes id `id` stands for: one byte for 0..255, the special string for specials, "" for
// reserved ids. Throws std::out_of_range when id is outside 0 .. vocab_size()-1.
std::string token_text(token_id id);

// Stateless; all members are const and thread-safe.
class tokenizer {
 public:
  // Without parse_special every byte becomes its own id. With parse_special, exact occurrences
  // of the special strings become their single id, scanning left to right and taking the longest
  // special that starts at the current position; everything else stays bytes (so "<|im_sta"
  // is eight byte ids).
  std::vector<token_id> encode(std::string_view text, bool parse_special) const;

  // Concatenation of token_text over the ids. Throws std::out_of_range on an id outside
  // 0 .. vocab_size()-1 (the message names the id and its position).
  std::string decode(const std::vector<token_id>& ids) const;
  // Same, over ids[0 .. count); ids may be null when count is 0.
  std::string decode(const token_id* ids, std::size_t count) const;

  // Conveniences that forward to the free functions above.
  bool is_special(token_id id) const { return anchorage::is_special(id); }
  std::optional<token_id> special_id(std::string_view text) const { return anchorage::special_id(text); }
  std::string token_text(token_id id) const { return anchorage::token_text(id); }
  int vocab_size() const { return anchorage::vocab_size(); }
};

}  // namespace anchorage
