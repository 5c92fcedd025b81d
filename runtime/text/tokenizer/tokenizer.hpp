#pragma once
// The tokenizer the server renders, tokenizes and decodes with: either the byte tokenizer (the
// default-constructed one) or a byte-level BPE read from a Hugging Face tokenizer.json.
//
// The byte tokenizer's vocabulary (vocab_size() == 272):
//   0 .. 255    the bytes 0x00 .. 0xff, one id per byte;
//   256 .. 265  the special tokens, in the order of special_tokens below;
//   266 .. 271  reserved padding: valid ids that decode to nothing and are never produced by encode.
// Round trip: decode(encode(s, p)) == s for every byte string s and either value of p.
// The free functions and special_tokens below describe the byte tokenizer only; code that may
// run with a BPE tokenizer asks the instance (tokenizer::ids(), is_special(), ...).
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/token.hpp"

namespace anchorage {

class bpe_tokenizer;

// The byte tokenizer's special ids.
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

// The byte tokenizer's number of ids, reserved padding included.
constexpr int vocab_size() { return 272; }

// The byte tokenizer: true for the ten special ids (256 .. 265); false for bytes, reserved ids
// and out-of-range ids.
bool is_special(token_id id);

// The byte tokenizer: the id of a special token given its exact text ("<think>"), or nullopt.
std::optional<token_id> special_id(std::string_view text);

// The byte tokenizer: the bytes id `id` stands for: one byte for 0..255, the special string for
// specials, "" for reserved ids. Throws std::out_of_range when id is outside 0 .. 271.
std::string token_text(token_id id);

// An id a tokenizer does not have (an optional chat token absent from a BPE file).
inline constexpr token_id no_token = -1;

// What decode() gives for a run of an image's rows (their key ids, runtime/core/token.hpp's
// is_image_row): the placeholder the chat template rendered where the rows now stand, once per
// run (one run is one image: the template puts text between two images). Not an answer to "which
// image": every image decodes to it, so text compared after decode() cannot tell two images
// apart (compare the ids).
inline constexpr std::string_view image_rows_text = "<|image_pad|>";

// The ids of the chat markers, looked up by their text. im_start and im_end are always present
// (a BPE file without them is refused); every other one may be no_token, which no generated id
// equals, so code comparing against it behaves as if the model never emits that marker.
struct chat_ids {
  token_id im_start = special_tokens::im_start;                        // <|im_start|>
  token_id im_end = special_tokens::im_end;                            // <|im_end|>
  token_id endoftext = special_tokens::endoftext;                      // <|endoftext|>
  token_id think_open = special_tokens::think_open;                    // <think>
  token_id think_close = special_tokens::think_close;                  // </think>
  token_id tool_call_open = special_tokens::tool_call_open;            // <tool_call>
  token_id tool_call_close = special_tokens::tool_call_close;          // </tool_call>
  token_id tool_response_open = special_tokens::tool_response_open;    // <tool_response>
  token_id tool_response_close = special_tokens::tool_response_close;  // </tool_response>
  token_id image_pad = special_tokens::image_pad;                      // <|image_pad|>
};

// A value type: copies share the immutable loaded tables, so copying is cheap; every const
// member is thread-safe.
class tokenizer {
 public:
  // The byte tokenizer.
  tokenizer();

  // A BPE tokenizer from a tokenizer.json file, or from its parsed document (`name` stands for
  // the file in messages). Throws tokenizer_file_error (bpe_tokenizer.hpp) for a file
  // bpe_tokenizer refuses, or one without <|im_start|> or <|im_end|> (the message names the file
  // and the token).
  static tokenizer from_json_file(const std::string& path);
  static tokenizer from_json(const nlohmann::json& document, const std::string& name);

  // True for the byte tokenizer.
  bool is_byte_level() const;
  // The BPE tokenizer, or null for the byte tokenizer.
  const bpe_tokenizer* bpe() const;
  // The file (or name) a BPE tokenizer came from; "byte" for the byte tokenizer.
  const std::string& name() const;

  const chat_ids& ids() const;

  // Byte tokenizer: see the layout above. BPE: without parse_special every added token's text
  // is ordinary text; with it, every added token is matched (bpe_tokenizer::encode).
  std::vector<token_id> encode(std::string_view text, bool parse_special) const;

  // Any bytes, valid UTF-8 or not, as ordinary text with no special token matched, such that
  // decode() gives them back: the byte tokenizer's one id per byte; BPE: the bytes as one word of
  // its model (no pre-tokenizer, which needs valid UTF-8).
  std::vector<token_id> encode_bytes(std::string_view bytes) const;

  // Concatenation of token_text over the ids, each run of an image's rows (a prompt's) as
  // image_rows_text. Throws std::out_of_range on any other id that is not defined (the message
  // names the id and its position).
  std::string decode(const std::vector<token_id>& ids) const;
  // Same, over ids[0 .. count); ids may be null when count is 0.
  std::string decode(const token_id* ids, std::size_t count) const;

  // One past the largest defined id.
  int vocab_size() const;
  // Whether `id` stands for something: every id below 272 for the byte tokenizer (reserved ones
  // included); for BPE the vocabulary's and the added tokens' ids (not holes).
  bool is_defined(token_id id) const;
  // Control tokens: the byte tokenizer's ten; for BPE every added token (special or not, so
  // Qwen3's <think> is one), i.e. the ids encode() gives only with parse_special.
  bool is_special(token_id id) const;
  // The id of the special (for BPE: added) token whose text is exactly `text`, or nullopt.
  std::optional<token_id> special_id(std::string_view text) const;
  // The bytes `id` decodes to ("" for the byte tokenizer's reserved ids). Throws
  // std::out_of_range when !is_defined(id), an image's row included (a run of rows is one
  // placeholder: decode() says so).
  std::string token_text(token_id id) const;
  // A token whose bytes are non-empty and all ' ', '\n', '\t' or '\r' (never a special).
  bool is_whitespace(token_id id) const;

  // By id, whether is_defined(id), for ids [0, vocab_size()): the sampler's mask.
  const std::shared_ptr<const std::vector<bool>>& defined_mask() const;

 private:
  struct state;
  explicit tokenizer(std::shared_ptr<const state> s) : s_(std::move(s)) {}
  static tokenizer from_bpe(const bpe_tokenizer& b);
  std::shared_ptr<const state> s_;
};

}  // namespace anchorage
