#pragma once
// The suffix store's read side (docs/SUFFIX_STORE.md, "In the server"): the latest snapshot the
// writer sent and the ids appended since (its deltas) as a tail, queried as one corpus in two
// parts: the snapshot's index and a linear scan of the ids past it. Answers are exactly the
// store's over the same ids. Not thread-safe: one owner (the board), which installs what the
// writer sends in the order it came.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/suffix/suffix_match.hpp"
#include "runtime/suffix/suffix_snapshot.hpp"

namespace anchorage {

class suffix_view {
 public:
  suffix_view();

  // Replaces what the view holds (a rebuild, a forget, a clear): the tail is dropped.
  void install(std::shared_ptr<const suffix_snapshot> snapshot);

  // Appends a delta's ids to the tail. A delta of another generation than the installed
  // snapshot's, or not starting where the view's ids end, is ignored (false): the next snapshot
  // covers it.
  bool extend(const suffix_delta& delta);

  suffix_match longest_match(const token_id* recent, std::size_t n, std::size_t min_len);
  std::vector<token_id> propose(const token_id* recent, std::size_t n, std::size_t max_draft);

  std::size_t ids() const { return base_->ids->size() + tail_.size(); }
  std::size_t segments() const { return seg_starts_.size(); }
  std::uint64_t generation() const { return base_->generation; }
  std::uint64_t lookups() const { return lookups_; }
  std::uint64_t hits() const { return hits_; }

 private:
  suffix_corpus corpus() const;

  std::shared_ptr<const suffix_snapshot> base_;
  std::vector<token_id> tail_;           // the ids after base_->ids
  std::vector<std::size_t> seg_starts_;  // of the whole: the snapshot's, then the tail's
  std::uint64_t lookups_ = 0, hits_ = 0;
};

}  // namespace anchorage
