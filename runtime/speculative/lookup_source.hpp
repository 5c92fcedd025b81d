#pragma once
// A read side of the persistent suffix store (runtime/suffix) as the lookup drafter asks it, on
// the board's thread: what followed the longest match of the recent tokens, weighted by how
// often it did. Implementations answer from an immutable snapshot (the store's writer and its
// rebuilds run elsewhere), so a query never waits for a write.
#include <cstddef>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

class lookup_source {
 public:
  virtual ~lookup_source() = default;
  // Up to max_draft ids that followed recent[0, n) (suffix_match.hpp's propose); empty when
  // nothing matched (zero drafts is a normal answer).
  virtual std::vector<token_id> propose(const token_id* recent, std::size_t n, std::size_t max_draft) = 0;
};

}  // namespace anchorage
