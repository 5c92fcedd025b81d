#pragma once
// The suffix store's admission rule: a request adds only what none of the last four requests
// already added. It keeps the last `keep` sequences and, for a new one, finds the longest
// prefix of it that one of them holds; the rest is what gets appended. Plain data, no I/O.
#include <cstddef>
#include <deque>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

struct suffix_admission {
  std::size_t skip = 0;    // the prefix held by a recent sequence: not appended
  bool continues = false;  // the rest follows the log's last id (the held sequence ends there)
};

class suffix_dedupe {
 public:
  explicit suffix_dedupe(std::size_t keep = 4) : keep_(keep) {}

  // What to append of `tokens`: skip its longest prefix one of the recent sequences holds (ties:
  // the one ending at the log's tail, then the most recent); the rest continues the log's last
  // segment only when that sequence is held whole and ends at the log's tail.
  suffix_admission admit(const std::vector<token_id>& tokens) const;

  // Records `tokens` as the newest sequence; `at_tail`: the log now ends with its last id (it
  // appended something, or it is wholly a sequence that did). Every older sequence loses its tail.
  void remember(std::vector<token_id> tokens, bool at_tail);

  // The log was rewritten or emptied so that no sequence ends at its tail any more.
  void forget_tail();
  void clear() { recent_.clear(); }
  std::size_t size() const { return recent_.size(); }

 private:
  struct entry {
    std::vector<token_id> tokens;
    bool at_tail = false;
  };
  std::size_t keep_;
  std::deque<entry> recent_;  // oldest first
};

}  // namespace anchorage
