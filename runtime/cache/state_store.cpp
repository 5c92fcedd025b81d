#include "runtime/cache/state_store.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <utility>

#include "runtime/core/token_prefix.hpp"

namespace anchorage {

std::uint64_t state_store::default_hash(const token_id* ids, std::size_t n) {
  return XXH3_64bits(ids, n * sizeof(token_id));
}

state_store::state_store(memory_budget& budget, budget_pool pool, std::size_t entry_cap_bytes, hash_fn hash)
    : budget_(budget), pool_(pool), entry_cap_(entry_cap_bytes), hash_(std::move(hash)) {
  if (!hash_) throw std::invalid_argument("state_store: an empty hash function");
}

state_store::~state_store() { clear(); }

std::size_t state_store::entries(kind k) const {
  return static_cast<std::size_t>(
      std::count_if(lru_.begin(), lru_.end(), [&](const entry& e) { return e.what == k; }));
}

state_store::entry_list::iterator state_store::find_exact(const token_id* tokens, std::size_t n,
                                                          std::uint64_t h) {
  auto by_len = by_length_.find(n);
  if (by_len == by_length_.end()) return lru_.end();
  auto range = by_len->second.equal_range(h);
  for (auto it = range.first; it != range.second; ++it)
    if (std::equal(tokens, tokens + n, it->second->tokens.begin())) return it->second;
  return lru_.end();
}

void state_store::unindex(entry_list::iterator e) {
  auto by_len = by_length_.find(e->tokens.size());
  assert(by_len != by_length_.end());
  auto range = by_len->second.equal_range(e->hash);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second == e) {
      by_len->second.erase(it);
      break;
    }
  }
  if (by_len->second.empty()) by_length_.erase(by_len);
}

std::size_t state_store::shrink_to_limit() {
  std::size_t n = 0;
  for (; !lru_.empty() && !budget_.fits(pool_, 0); ++n) evict_lru();
  return n;
}

void state_store::evict_lru() {
  assert(!lru_.empty());
  auto victim = std::prev(lru_.end());
  unindex(victim);
  budget_.release(pool_, victim->bytes);
  bytes_ -= victim->bytes;
  lru_.erase(victim);
  ++evictions_;
}

bool state_store::insert(const std::vector<token_id>& tokens, const state_adapter& from,
                         kernels::backend where, kind k) {
  const std::size_t n = tokens.size();
  if (n == 0) throw std::invalid_argument("state_store::insert: no tokens");
  if (n > from.valid_length())
    throw std::invalid_argument("state_store::insert: " + std::to_string(n) +
                                " tokens for a state valid to " + std::to_string(from.valid_length()));

  const std::uint64_t h = hash_(tokens.data(), n);
  auto present = find_exact(tokens.data(), n, h);
  if (present != lru_.end()) {
    touch(present);
    return true;
  }

  // Sized before anything is copied; refused outright when it could never fit.
  const std::size_t need = state_copy::bytes_for(from.layout(), n);
  const std::size_t held_by_others = budget_.used(pool_) - std::min(budget_.used(pool_), bytes_);
  const std::size_t limit = budget_.limit(pool_);
  if (need > entry_cap_ || held_by_others > limit || need > limit - held_by_others) {
    ++refusals_;
    return false;
  }
  // Room first: by the check above, evicting every entry of this store makes it fit.
  while (!budget_.fits(pool_, need)) evict_lru();
  const bool reserved = budget_.reserve(pool_, need);
  assert(reserved);
  (void)reserved;

  entry e;
  try {
    e.state = state_copy::take(from, where, n);
  } catch (...) {
    budget_.release(pool_, need);
    throw;
  }
  assert(e.state.bytes() == need);
  e.tokens = tokens;
  e.hash = h;
  e.what = k;
  e.bytes = need;
  lru_.push_front(std::move(e));
  by_length_[n].emplace(h, lru_.begin());
  bytes_ += need;
  return true;
}

std::optional<state_store::hit> state_store::lookup(const std::vector<token_id>& prompt,
                                                    std::size_t max_len) {
  const std::size_t cap = std::min(max_len, prompt.size());
  // Longest length first; the prompt's prefix is hashed once per distinct stored length.
  for (auto by_len = by_length_.lower_bound(cap); by_len != by_length_.end(); ++by_len) {
    const std::size_t n = by_len->first;
    if (ends_in_image_key_rows(prompt, n)) continue;
    const std::uint64_t h = hash_(prompt.data(), n);
    auto range = by_len->second.equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
      entry& e = *it->second;
      if (!std::equal(e.tokens.begin(), e.tokens.end(), prompt.begin())) {
        ++collisions_;
        continue;
      }
      touch(it->second);
      ++hits_;
      return hit{n, &e.state, e.what == kind::prefix};
    }
  }
  ++misses_;
  return std::nullopt;
}

std::size_t state_store::drop_prefixes_of(const std::vector<token_id>& tokens, kind k) {
  std::size_t dropped = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    const bool prefix = it->what == k && it->tokens.size() < tokens.size() &&
                        std::equal(it->tokens.begin(), it->tokens.end(), tokens.begin());
    if (!prefix) {
      ++it;
      continue;
    }
    unindex(it);
    budget_.release(pool_, it->bytes);
    bytes_ -= it->bytes;
    it = lru_.erase(it);
    ++dropped;
    ++superseded_;
  }
  return dropped;
}

void state_store::clear() {
  budget_.release(pool_, bytes_);
  bytes_ = 0;
  by_length_.clear();
  lru_.clear();
}

}  // namespace anchorage
