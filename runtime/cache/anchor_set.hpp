#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "runtime/cache/memory_budget.hpp"
#include "runtime/engine/state_copy.hpp"

namespace anchorage {

// The resident prefix's grid anchors: a copy of every section at a line the
// prefill passed; the rows stay in the engine's buffers. Held to the budget's pool: room is made
// before a copy is taken, by dropping the anchor whose loss costs least (the one whose removal
// widens the gap to the anchor below it the least), never one of the `keep_newest` newest.
//
// Not thread-safe: one owner (the board).
class anchor_set {
 public:
  explicit anchor_set(memory_budget& budget, budget_pool pool = budget_pool::resident,
                      std::size_t keep_newest = 4);
  ~anchor_set();
  anchor_set(const anchor_set&) = delete;
  anchor_set& operator=(const anchor_set&) = delete;

  // Copies the sections of `from` as the anchor at from.valid_length(). An anchor already at
  // that position is kept (the same tokens give the same bits) and counts as the newest.
  // Returns false, copying nothing, when the pool cannot hold one more even after evicting
  // every anchor it may evict.
  bool take(const state_adapter& from, kernels::backend where);

  // The largest anchor position <= limit.
  std::optional<std::size_t> best_at_or_below(std::size_t limit) const;
  // The anchor at `pos`; nullptr when there is none.
  const state_copy* at(std::size_t pos) const;

  // Reserves `bytes` in the pool for a copy kept beside the anchors (the end anchor), evicting
  // anchors as take() does. False when even that cannot make room; nothing is reserved then.
  bool reserve_evicting(std::size_t bytes) { return make_room(bytes); }

  // Takes the anchor at `pos` out of the set (its bytes leave this pool); empty when none.
  std::optional<state_copy> extract(std::size_t pos);
  // Puts a copy taken elsewhere back as the anchor at `pos` (newest), making room as take()
  // does; false (the copy is dropped) when there is none.
  bool adopt(std::size_t pos, state_copy copy);

  // Drops every anchor above `pos` (their rows are about to be overwritten).
  void drop_above(std::size_t pos);
  void clear();

  std::size_t size() const { return anchors_.size(); }
  std::size_t bytes() const { return bytes_; }
  long evictions() const { return evictions_; }
  long refusals() const { return refusals_; }
  std::map<std::size_t, std::uint64_t> positions() const;  // position -> age stamp (the slots view, tests)

 private:
  struct entry {
    state_copy copy;
    std::uint64_t stamp = 0;  // higher is newer
  };
  bool make_room(std::size_t bytes);
  void erase(std::map<std::size_t, entry>::iterator it);

  memory_budget& budget_;
  budget_pool pool_;
  std::size_t keep_newest_;
  std::map<std::size_t, entry> anchors_;
  std::uint64_t clock_ = 0;
  std::size_t bytes_ = 0;
  long evictions_ = 0;
  long refusals_ = 0;
};

}  // namespace anchorage
