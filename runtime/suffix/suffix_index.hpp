#pragma once
// The suffix array over the store's ids [0, end()) at the time it was built: positions of the
// flat id sequence sorted by the suffix that starts there and stops at its segment's end (in
// the build's snapshot), so that no match crosses a segment boundary. The ids themselves stay
// the store's: every query takes them (the store only appends, so the first end() ids never
// change while an index is installed; forgetting rebuilds it).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

// A half-open range of suffix-array slots.
struct sa_range {
  std::size_t lo = 0, hi = 0;
  std::size_t size() const { return hi - lo; }
  bool empty() const { return hi <= lo; }
};

class suffix_index {
 public:
  suffix_index() = default;

  // Builds the index over ids[0, n) cut into segments at seg_starts (ascending, the first 0 when
  // n > 0; starts at or past n are ignored). The ids are mapped to a dense alphabet (order kept),
  // every segment is closed by one separator smaller than any id, and SA-IS sorts the result;
  // separator slots are dropped. Ids must be >= 0 (asserted; the
  // symbols' order puts the separator, -1, below every id): the store never holds an image's
  // negative row ids (suffix_store::add, suffix_log::parse).
  static suffix_index build(const token_id* ids, std::size_t n, const std::vector<std::size_t>& seg_starts);

  std::size_t end() const { return end_; }  // ids covered
  std::size_t size() const { return sa_.size(); }
  std::uint32_t position(std::size_t slot) const { return sa_[slot]; }

  // Where the segment holding position p ends in this index's snapshot.
  std::size_t segment_end(std::size_t p) const;

  // The id at depth d of the suffix in `slot`, or -1 (the separator) past its segment's end.
  token_id symbol(const token_id* ids, std::size_t slot, std::size_t d) const {
    const std::size_t p = sa_[slot] + d;
    return p < segment_end(sa_[slot]) ? ids[p] : -1;
  }

  // The slots whose suffixes start with pattern[0, len).
  sa_range find(const token_id* ids, const token_id* pattern, std::size_t len) const;

  // Within `r` (suffixes sharing their first d ids), the sub-range whose id at depth d is `id`
  // (-1: those ending at depth d). The range's symbols at depth d ascend, so this is a binary
  // search.
  sa_range narrow(const token_id* ids, sa_range r, std::size_t d, token_id id) const;

 private:
  std::vector<std::uint32_t> sa_;
  std::vector<std::size_t> seg_starts_;  // of the snapshot
  std::size_t end_ = 0;
};

}  // namespace anchorage
