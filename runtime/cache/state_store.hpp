#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/device.hpp"
#include "runtime/cache/memory_budget.hpp"
#include "runtime/engine/state_adapter.hpp"
#include "runtime/engine/state_copy.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

// The state store (docs/CACHES.md): whole snapshots (every section plus rows [0, n) of every view),
// keyed by the n token ids that produced them. The session cache keeps a conversation's state
// after its turn; the prefix cache keeps a snapshot at a grid line of a prefill.
//
// Memory: every snapshot's bytes are reserved in one pool of a memory_budget before
// anything is copied, and released on eviction, clear() and destruction. Room is made by evicting
// least-recently-used entries first; an entry over the per-entry cap, or one that would not fit
// even with every entry of this store evicted, is refused and evicts nothing.
//
// Lookup: the 64-bit hash of the tokens is an index, never an answer. Every candidate is compared
// token by token with the prompt before it is returned; a hash match whose tokens differ is a
// refused collision.
//
// Not thread-safe: one owner (the board) uses it. The budget must outlive the store.
class state_store {
 public:
  using hash_fn = std::function<std::uint64_t(const token_id*, std::size_t)>;

  // XXH3_64bits over the int32 ids as bytes.
  static std::uint64_t default_hash(const token_id* ids, std::size_t n);

  // `pool` is the budget pool this store reserves in (its limit, --cache-budget-gb, is set by
  // the owner on the budget); `entry_cap_bytes` is --store-entry-gb in bytes. `hash` is
  // injectable so a test can force collisions.
  explicit state_store(memory_budget& budget, budget_pool pool = budget_pool::store,
                       std::size_t entry_cap_bytes = std::numeric_limits<std::size_t>::max(),
                       hash_fn hash = default_hash);
  ~state_store();  // releases every reserved byte
  state_store(const state_store&) = delete;
  state_store& operator=(const state_store&) = delete;

  // What an entry is: a `prefix` snapshot, which its inserter promises is a cold prefill's state at
  // a grid line, or a `session` snapshot (rows a generation wrote), a session resume.
  enum class kind { session, prefix };

  // What lookup() found. `copy` points into the store and stays valid until the next insert()
  // (which may evict it) or clear(). Restore with copy->restore(engine.cache_state(), length).
  // `exact`: the entry is a prefix snapshot.
  struct hit {
    std::size_t length = 0;
    const state_copy* copy = nullptr;
    bool exact = false;
  };

  // Keeps a snapshot of rows [0, tokens.size()) of `from`, taken on `where`, keyed by `tokens`.
  // `k` is what the entry is (stats, and hit::exact). Returns true when the entry is
  // stored, or was already present (then it is only touched as most recently used, not copied
  // again); false, with a refusal counted, when it is over the per-entry cap or cannot fit in
  // the pool even empty. Throws std::invalid_argument when tokens is empty or longer than
  // from.valid_length(); nothing changes then.
  bool insert(const std::vector<token_id>& tokens, const state_adapter& from, kernels::backend where, kind k);

  // The longest entry whose tokens are a prefix of `prompt` and whose length is <= max_len (a
  // caller that must forward at least one token passes prompt.size() - 1), never one that ends
  // inside an image's first image_key_rows rows of the prompt (runtime/core/token_prefix.hpp's
  // rule: those rows pin only part of the image's digest; an entry there may hold another
  // image's rows). Tokens are compared as ids, an image's negative row ids included. A hit is
  // touched as most recently used and counted; otherwise a miss is counted.
  std::optional<hit> lookup(const std::vector<token_id>& prompt, std::size_t max_len);

  // The caller reports that it restored a hit of `tokens` tokens: tokens_saved() sums these.
  // (Counted here rather than in lookup(), since a caller may find a better source and not
  // restore the hit.)
  void note_restored(std::size_t tokens) { tokens_saved_ += tokens; }

  // Drops the entries of kind `k` whose tokens are a proper prefix of `tokens` (a conversation's
  // earlier session snapshots, once its newer turn is kept) and releases their bytes; counted
  // as superseded, not evicted. Returns how many were dropped.
  std::size_t drop_prefixes_of(const std::vector<token_id>& tokens, kind k);

  // Drops every entry and releases its bytes (not counted as evictions). Counters are kept.
  void clear();
  // Evicts least recently used entries while the pool holds more than its limit (a limit lowered
  // while the server runs); returns how many went.
  std::size_t shrink_to_limit();

  std::size_t entries() const { return lru_.size(); }
  std::size_t entries(kind k) const;
  std::size_t bytes() const { return bytes_; }  // reserved in the pool by this store
  long hits() const { return hits_; }
  long misses() const { return misses_; }
  long evictions() const { return evictions_; }
  long refusals() const { return refusals_; }      // inserts refused (cap or pool)
  long collisions() const { return collisions_; }  // lookup candidates refused by the token check
  long superseded() const { return superseded_; }
  std::size_t tokens_saved() const { return tokens_saved_; }

  budget_pool pool() const { return pool_; }
  std::size_t entry_cap_bytes() const { return entry_cap_; }

 private:
  struct entry {
    std::vector<token_id> tokens;
    std::uint64_t hash = 0;
    kind what = kind::session;
    std::size_t bytes = 0;  // reserved in the pool for this entry
    state_copy state;
  };
  using entry_list = std::list<entry>;  // front: most recently used
  using hash_index = std::unordered_multimap<std::uint64_t, entry_list::iterator>;

  // The entry with exactly `tokens` (of hash h), if any.
  entry_list::iterator find_exact(const token_id* tokens, std::size_t n, std::uint64_t h);
  void touch(entry_list::iterator it) { lru_.splice(lru_.begin(), lru_, it); }
  void evict_lru();
  void unindex(entry_list::iterator it);

  memory_budget& budget_;
  budget_pool pool_;
  std::size_t entry_cap_;
  hash_fn hash_;

  entry_list lru_;
  std::map<std::size_t, hash_index, std::greater<>> by_length_;  // longest first
  std::size_t bytes_ = 0;

  long hits_ = 0, misses_ = 0, evictions_ = 0, refusals_ = 0, collisions_ = 0, superseded_ = 0;
  std::size_t tokens_saved_ = 0;
};

}  // namespace anchorage
