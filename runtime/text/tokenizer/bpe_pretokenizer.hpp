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
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/text/tokenizer/split_regex.hpp"

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
  static bpe_pretokenizer from_json(const nlohmann::json& node);

  // Calls emit(piece) for each pre-token of `text`, in order. Without add_prefix_space the pieces
  // concatenate to `text`; with it, each piece entering ByteLevel that does not start with ' '
  // gets one before ByteLevel's own regex splits it (as in the HF tokenizers library). A piece is
  // valid only during its call. Thread-safe.
  void split(std::string_view text, const std::function<void(std::string_view)>& emit) const;

  const std::vector<split_regex>& steps() const { return steps_; }
  bool add_prefix_space() const { return add_prefix_space_; }

 private:
  void split_valid(std::string_view text, const std::function<void(std::string_view)>& emit) const;
  void byte_level(std::string_view piece, bool valid_utf8,
                  const std::function<void(std::string_view)>& emit) const;

  std::vector<split_regex> steps_;             // the Split pre-tokenizers, in order
  std::vector<split_regex> byte_level_regex_;  // GPT-2's pattern when ByteLevel's use_regex (0 or 1)
  bool add_prefix_space_ = false;
};

}  // namespace anchorage
