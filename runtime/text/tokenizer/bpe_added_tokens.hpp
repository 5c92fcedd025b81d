#pragma once
// The "added_tokens" of a tokenizer.json and the split of a text at their occurrences.
//
// A text is scanned left to right; at the first position where an eligible token's text occurs,
// the longest such token is taken (leftmost-longest, as the HF tokenizers library and
// transformers.js do), and the scan resumes after it. lstrip / rstrip widen a match over the
// Unicode white space to its left / right, so that white space is not encoded. Tokens with
// normalized=true are matched in the normalized text, against their normalized content.
// single_word=true is refused at load (no Qwen file sets it).
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/token.hpp"

namespace anchorage {

struct added_token {
  token_id id = 0;
  std::string content;  // the text it decodes to
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  std::string match_text;  // what is searched for: content, normalized when `normalized`
};

// Which added tokens encode() recognises in its input.
enum class added_token_matching {
  none,         // none: their text is tokenized like any other text
  non_special,  // only those with special=false (HF's split_special_tokens=True; llama.cpp's
                // parse_special=false, which still matches user-defined tokens)
  all,          // all of them (HF's default; transformers.js, the reference, has no other mode)
};

class added_token_set {
 public:
  struct segment {
    std::string_view text;     // the text between matches (token == nullptr), or the match
    const added_token* token;  // the token matched, or nullptr
  };

  // Refuses (std::invalid_argument naming the JSON path) a malformed entry, an empty content,
  // single_word=true and two tokens with the same content. `normalize` gives normalized
  // tokens their match_text.
  template <class Normalize>
  static added_token_set from_json(const nlohmann::json& node, Normalize&& normalize) {
    added_token_set set = parse(node);
    for (added_token& t : set.tokens_) t.match_text = t.normalized ? normalize(t.content) : t.content;
    set.index();
    return set;
  }

  // Appends the segments of `text` to `out`, matching the eligible tokens whose `normalized`
  // flag equals `normalized_pass`. Their texts concatenate to `text`. Thread-safe.
  void split(std::string_view text, added_token_matching matching, bool normalized_pass,
             std::vector<segment>& out) const;

  const std::vector<added_token>& tokens() const { return tokens_; }
  bool any_normalized() const { return any_normalized_; }

 private:
  static added_token_set parse(const nlohmann::json& node);
  void index();
  const added_token* longest_at(std::string_view text, std::size_t pos, added_token_matching matching,
                                bool normalized_pass) const;

  std::vector<added_token> tokens_;
  std::vector<const added_token*> by_length_;  // longest first
  bool first_byte_[256] = {};
  bool any_normalized_ = false;
};

}  // namespace anchorage
