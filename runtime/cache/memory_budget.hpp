#pragma once
#include <cstddef>
#include <array>
#include <cstdint>

namespace anchorage {

// The budget's pools: the resident prefix's anchors and end anchor, the state store, a guest's
// stash, the pinned head, the parked session.
enum class budget_pool : std::uint8_t { resident, store, stash, pin, park };
inline constexpr std::size_t budget_pool_count = 5;

// The device tiers' budget (docs/CACHES.md, "Budgets"): every device copy a cache keeps (anchors, snapshots,
// and later the stash, the pinned head and the parked session) is held to the limit of its pool. A cache asks
// before it allocates or copies anything; a refusal decides only where a later prefill starts
// (a colder start), never a token.
//
// Not thread-safe: one owner (the board) uses it.
class memory_budget {
 public:
  // Sets (or changes) a pool's limit in bytes. Lowering a limit below what is held is allowed:
  // the pool then refuses every reservation until its owner releases enough.
  void set_limit(budget_pool pool, std::size_t bytes);

  // Reserves `bytes` in `pool` if they fit under its limit; false (and a refusal counted)
  // otherwise. A pool whose limit was never set has limit 0.
  bool reserve(budget_pool pool, std::size_t bytes);
  // Gives back bytes reserved earlier. Releasing more than is held is a programmer error.
  void release(budget_pool pool, std::size_t bytes);

  bool fits(budget_pool pool, std::size_t bytes) const;
  std::size_t limit(budget_pool pool) const;
  std::size_t used(budget_pool pool) const;
  std::size_t free(budget_pool pool) const;
  long refusals(budget_pool pool) const;

 private:
  struct pool_state {
    std::size_t limit = 0;
    std::size_t used = 0;
    long refusals = 0;
  };
  pool_state& at(budget_pool p) { return pools_[static_cast<std::size_t>(p)]; }
  const pool_state& at(budget_pool p) const { return pools_[static_cast<std::size_t>(p)]; }
  std::array<pool_state, budget_pool_count> pools_{};
};

}  // namespace anchorage
