#pragma once
#include <cstddef>
#include <map>
#include <string>

namespace anchorage {

// The seed's Budget (§13.12): every device copy a cache keeps (anchors, snapshots, and later the
// stash, the pinned head and the parked session) is held to the limit of its pool. A cache asks
// before it allocates or copies anything; a refusal decides only where a later prefill starts
// (a colder start), never a token.
//
// Not thread-safe: one owner (the board) uses it.
class memory_budget {
 public:
  // Sets (or changes) a pool's limit in bytes. Lowering a limit below what is held is allowed:
  // the pool then refuses every reservation until its owner releases enough.
  void set_limit(const std::string& pool, std::size_t bytes);

  // Reserves `bytes` in `pool` if they fit under its limit; false (and a refusal counted)
  // otherwise. An unknown pool has limit 0.
  bool reserve(const std::string& pool, std::size_t bytes);
  // Gives back bytes reserved earlier. Releasing more than is held is a programmer error.
  void release(const std::string& pool, std::size_t bytes);

  bool fits(const std::string& pool, std::size_t bytes) const;
  std::size_t limit(const std::string& pool) const;
  std::size_t used(const std::string& pool) const;
  std::size_t free(const std::string& pool) const;
  long refusals(const std::string& pool) const;

 private:
  struct pool_state {
    std::size_t limit = 0;
    std::size_t used = 0;
    long refusals = 0;
  };
  std::map<std::string, pool_state> pools_;
};

}  // namespace anchorage
