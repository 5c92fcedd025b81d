#pragma once
// The lookup drafter's source over the persistent suffix store (docs/SUFFIX_STORE.md, "In the
// server"): a lookup_source answering from a suffix_view, into which its owner (the board actor)
// installs the snapshots and deltas the store's writer sends. Here rather than in runtime/suffix
// because the interface is speculative's and speculative uses suffix (not the other way).
// Not thread-safe: the board's thread only.
#include <cstddef>
#include <vector>

#include "runtime/speculative/lookup_source.hpp"
#include "runtime/suffix/suffix_view.hpp"

namespace anchorage {

class suffix_lookup final : public lookup_source {
 public:
  std::vector<token_id> propose(const token_id* recent, std::size_t n, std::size_t max_draft) override;

  suffix_view& view() { return view_; }
  const suffix_view& view() const { return view_; }

 private:
  suffix_view view_;
};

}  // namespace anchorage
