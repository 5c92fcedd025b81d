#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace anchorage {

// Wall-clock seconds for the disk tier's eviction policy. Injected so tests can move time by hand;
// the policy only ever compares differences of now_s() with entries' last_use_s.
struct eviction_clock {
  virtual ~eviction_clock() = default;
  virtual std::int64_t now_s() const = 0;
};

// Seconds since the epoch from the system clock: last-use times outlive the process (they are
// restored from the files at start), so this is wall time, not the steady clock.
struct system_eviction_clock final : eviction_clock {
  std::int64_t now_s() const override;
};

// A clock that moves only when told to. For tests; never used by the server.
class manual_clock final : public eviction_clock {
 public:
  explicit manual_clock(std::int64_t start_s = 0) : now_(start_s) {}
  std::int64_t now_s() const override { return now_; }
  void set(std::int64_t s) { now_ = s; }
  void advance(std::int64_t s) { now_ += s; }

 private:
  std::int64_t now_;
};

// One file of the disk tier as the policy sees it: no path, no I/O.
struct eviction_entry {
  std::uint64_t bytes = 0;         // bytes the file holds on disk; must be > 0
  std::uint64_t tokens_saved = 0;  // prefill tokens one restore saves
  std::uint64_t hits = 0;          // restores served so far
  std::int64_t last_use_s = 0;     // eviction_clock time of the last write or hit
  // The entry this one needs (the shorter chunk of its chain, or the chunk an anchor sits on).
  // Evicting an entry evicts every entry below it in this tree.
  std::optional<std::uint64_t> parent;
};

struct disk_eviction_options {
  std::uint64_t budget_bytes = 50ULL << 30;   // --disk-cache-gb (50)
  std::int64_t lifetime_s = 7 * 24 * 3600;    // an entry unused longer than this goes
  std::uint64_t min_free_bytes = 4ULL << 30;  // free space always left to the file system
};

// --disk-cache-gb in bytes (GiB, as the memory pools count).
std::uint64_t disk_budget_bytes_from_gb(double gb);

// The disk tier's budget and eviction policy, a pure policy over an index of entries keyed by a
// 64-bit id (the file's hash). It decides which files to delete; the caller deletes them and then
// calls remove() for each.
//
// Value of an entry = (hits + 1) × tokens_saved / bytes, halved for every full day since its last
// use. Ties go to the older last use first, then to the lower id.
//
// Invariant: every entry's parent is in the index (add refuses an unknown parent, remove takes the
// descendants with it), so the parent links form a forest.
//
// Not thread-safe: one owner (the disk writer) uses it.
class disk_eviction {
 public:
  disk_eviction(const eviction_clock& clock, disk_eviction_options options = {});

  // Adds an entry with the last_use_s it carries (now_s() for a new file, the file's time for one
  // found at start). False, and nothing changed, when the id is already present, the parent is
  // not in the index, or bytes is 0.
  bool add(std::uint64_t id, const eviction_entry& entry);
  // A restore used the entry: one more hit, last use = now. False for an unknown id.
  bool touch(std::uint64_t id);
  // Removes the entry and all its descendants; returns the ids removed, descendants first
  // (empty for an unknown id).
  std::vector<std::uint64_t> remove(std::uint64_t id);

  // The ids to delete, in order, given the file system's current free bytes. Does not change the
  // index. First every entry unused longer than the lifetime; then, while the bytes held exceed
  // the budget or the free bytes (plus what the plan frees) are under the floor, the least
  // valuable entry left. Each entry comes with its descendants, every entry listed before its
  // parent (children in id order), so deleting in this order never leaves an entry whose parent
  // is gone.
  // With incoming_bytes, room is made for a write of that many bytes: the budget must hold
  // them too and the floor must still be left once they are written.
  // Ids in `keep` (closed under parents: an entry's parent is kept when it is) are never chosen:
  // the entries a write stands on.
  std::vector<std::uint64_t> plan_evictions(std::uint64_t free_bytes, std::uint64_t incoming_bytes = 0,
                                            const std::unordered_set<std::uint64_t>& keep = {}) const;

  // The value the policy ranks by, at the clock's current time. The entry must exist.
  double value(std::uint64_t id) const;

  bool contains(std::uint64_t id) const { return nodes_.count(id) != 0; }
  const eviction_entry* find(std::uint64_t id) const;
  std::size_t size() const { return nodes_.size(); }
  std::uint64_t held_bytes() const { return held_bytes_; }
  const disk_eviction_options& options() const { return options_; }
  // Changes the budget, lifetime and floor (an operator's live setting). Evicts nothing: the
  // owner asks plan_evictions() next.
  void set_options(const disk_eviction_options& o) { options_ = o; }

 private:
  struct node {
    eviction_entry entry;
    std::vector<std::uint64_t> children;  // sorted by id
  };
  // Appends id's subtree (descendants first, children in id order) to out, skipping ids in
  // `taken` and marking those it appends; returns the bytes appended.
  std::uint64_t append_subtree(std::uint64_t id, std::unordered_set<std::uint64_t>& taken,
                               std::vector<std::uint64_t>& out) const;
  double value_at(const eviction_entry& e, std::int64_t now) const;

  const eviction_clock& clock_;
  disk_eviction_options options_;
  std::unordered_map<std::uint64_t, node> nodes_;
  std::uint64_t held_bytes_ = 0;
};

}  // namespace anchorage
