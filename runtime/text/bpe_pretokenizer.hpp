#pragma once
// The text side of a Hugging Face tokenizer.json, before the BPE model: the normalizer and the
// pre-tokenizer, read from their JSON nodes. Only what byte-level BPE files use is supported;
// anything else is refused at load with std::invalid_argument naming the JSON path.
//
//   normalizer:    null | {"type":"NFC"} | {"type":"Sequence","normalizers":[...]} of those.
//   pre_tokenizer: ByteLevel | {"type":"Sequence","pretokenizers":[Split..., ByteLevel]}, where
//                  Split has a "Regex" or "String" pattern, behavior "Isolated", invert false,
//                  and ByteLevel comes last (use_regex adds GPT-2's pattern as one more Split;
//                  add_prefix_space prepends ' ' to each piece that does not start with one;
//                  trim_offsets only concerns offsets, which this tokenizer does not report).
//
// Invalid UTF-8 (the API takes bytes): normalization leaves invalid bytes as they are and
// normalizes the valid text between them; splitting treats each maximal run of invalid bytes
// as a piece of its own and splits the valid runs around it as if they were separate texts.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/text/split_regex.hpp"

namespace anchorage {

// GPT-2's pre-tokenization pattern, which ByteLevel applies when use_regex is true.
extern const char* const gpt2_split_pattern;

class text_normalizer {
 public:
  static text_normalizer from_json(const nlohmann::json& node);

  // The normalized text (NFC through utf8proc when enabled). Thread-safe.
  std::string apply(std::string_view text) const;
  bool is_identity() const { return !nfc_; }

 private:
  bool nfc_ = false;
};

class bpe_pretokenizer {
 public:
  struct piece {
    std::string_view text;  // a view into the text given to split()
    bool prefix_space;      // the piece is to be read with ' ' in front (ByteLevel add_prefix_space)
  };

  static bpe_pretokenizer from_json(const nlohmann::json& node);

  // Appends the pieces of `text` to `out`; their texts concatenate to `text`. Thread-safe.
  void split(std::string_view text, std::vector<piece>& out) const;

  const std::vector<split_regex>& steps() const { return steps_; }
  bool add_prefix_space() const { return add_prefix_space_; }

 private:
  void split_valid(std::string_view text, std::vector<piece>& out) const;

  std::vector<split_regex> steps_;
  bool add_prefix_space_ = false;
};

}  // namespace anchorage
