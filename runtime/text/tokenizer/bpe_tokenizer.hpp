#pragma once
// A byte-level BPE tokenizer read from a Hugging Face tokenizer.json (Qwen2/3/3.5, GPT-2 style).
//
// encode(): split out added tokens (see added_token_matching), NFC-normalize the rest, cut it
// with the file's pre-tokenizer regexes (PCRE2, UTF + UCP), and BPE-merge each piece's bytes by
// merge rank. Nothing is prepended or appended (no BOS/EOS: HF's add_special_tokens=false).
// decode(): the concatenation of each token's bytes, an added token's being its content. Bytes,
// not text: a token may end inside a UTF-8 sequence (see utf8_stream.hpp for streaming output).
//
// Any byte string can be encoded: invalid UTF-8 never reaches the regex or the normalizer, each
// run of invalid bytes is a pre-token of its own, BPE-merged at byte level (bpe_pretokenizer.hpp).
// decode(encode(s)) == s whenever s is its own NFC (always for ASCII) and the file's ByteLevel has
// no add_prefix_space (Qwen's has none; with it, each section gains a leading ' ').
//
// Immutable after from_file(); copies share the loaded tables; every const member is
// thread-safe. encode() keeps a per-thread cache of word merges (up to 32k words of <= 64 bytes).
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/token.hpp"
#include "runtime/text/tokenizer/bpe_added_tokens.hpp"

namespace anchorage {

// A tokenizer.json that cannot be used. what() is "tokenizer file '<path>': <problem>", the
// problem naming the JSON path where it applies (e.g. "pre_tokenizer.pretokenizers[0].pattern").
class tokenizer_file_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class bpe_tokenizer {
 public:
  // Reads and checks `path`. Throws tokenizer_file_error when the file is missing or unreadable,
  // is not JSON, has a model other than BPE, a normalizer or pre-tokenizer component this class
  // does not implement, a regex PCRE2 rejects (with PCRE2's message), or inconsistent tables.
  static bpe_tokenizer from_file(const std::string& path);
  // The same checks on a parsed tokenizer.json; `path` names it in messages and path().
  static bpe_tokenizer from_json(const nlohmann::json& root, const std::string& path);

  // parse_special == true matches every added token (added_token_matching::all); false matches
  // none, so "<|im_start|>" in user text is ordinary text. See added_token_matching for the
  // middle ground HF and llama.cpp use for non-special added tokens such as Qwen3's <think>.
  std::vector<token_id> encode(std::string_view text, bool parse_special) const;
  std::vector<token_id> encode(std::string_view text, added_token_matching matching) const;
  // Any bytes (valid UTF-8 or not) as one word of the model: no normalizer, no pre-tokenizer, no
  // added tokens; decode() of the result gives `bytes` back.
  std::vector<token_id> encode_bytes(std::string_view bytes) const;

  // Concatenation of token_bytes over the ids, each run of an image's rows (a prompt's key ids,
  // runtime/core/token.hpp) as image_rows_text (tokenizer.hpp). Throws std::out_of_range for any
  // other id that is not defined (the message names the id and its position).
  std::string decode(const std::vector<token_id>& ids) const;
  std::string decode(const token_id* ids, std::size_t count) const;

  // One past the largest id that the vocabulary or an added token defines.
  int vocab_size() const;
  // True for ids the vocabulary or an added token defines; false for holes, negative ids and
  // ids >= vocab_size() (such as a model's embedding padding).
  bool is_defined(token_id id) const;
  // True for added tokens with special=true.
  bool is_special(token_id id) const;
  // The id of the added token (special or not) whose content is exactly `text`.
  std::optional<token_id> special_id(std::string_view text) const;
  // The bytes `id` decodes to. Throws std::out_of_range when !is_defined(id).
  const std::string& token_bytes(token_id id) const;

  const std::vector<added_token>& added_tokens() const;
  const std::string& path() const;

 private:
  struct tables;
  explicit bpe_tokenizer(std::shared_ptr<const tables> t) : t_(std::move(t)) {}
  void encode_text(std::string_view text, added_token_matching matching, std::vector<token_id>& out) const;
  std::shared_ptr<const tables> t_;
};

}  // namespace anchorage
