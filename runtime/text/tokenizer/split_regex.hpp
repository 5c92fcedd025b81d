#pragma once
// A pattern compiled by PCRE2 in UTF + UCP mode (JIT-compiled where the library supports it),
// used the way a Hugging Face `Split` pre-tokenizer with behavior "Isolated" uses it: the text is
// cut into the matches and the gaps between them, in order, none empty.
//
// UCP mode gives \d \s \w and the POSIX classes their Unicode meaning: \s is Unicode white space,
// U+0085 included and U+FEFF not (JavaScript's \s, in transformers.js, is the other way round).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace anchorage {

class split_regex {
 public:
  enum class syntax { regex, literal };

  // Throws std::invalid_argument with PCRE2's message and the offset it stopped at when the
  // pattern does not compile.
  split_regex(std::string_view pattern, syntax kind);

  // Appends to `out` the matches and the non-empty gaps of `text`, which must be valid UTF-8.
  // Thread-safe (each thread keeps its own match data). Throws std::runtime_error when PCRE2
  // fails to match for a reason other than "no match" (a resource limit).
  void split_isolated(std::string_view text, std::vector<std::string_view>& out) const;

  const std::string& pattern() const { return pattern_; }
  bool jit() const;

 private:
  struct compiled;
  std::string pattern_;
  std::shared_ptr<const compiled> code_;
};

}  // namespace anchorage
