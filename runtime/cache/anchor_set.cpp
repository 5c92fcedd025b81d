#include "runtime/cache/anchor_set.hpp"

#include <algorithm>
#include <vector>

namespace anchorage {

anchor_set::anchor_set(memory_budget& budget, budget_pool pool, std::size_t keep_newest)
    : budget_(budget), pool_(pool), keep_newest_(keep_newest) {}

anchor_set::~anchor_set() { clear(); }

bool anchor_set::take(const state_adapter& from, kernels::backend where) {
  const std::size_t pos = from.valid_length();
  auto it = anchors_.find(pos);
  if (it != anchors_.end()) {
    it->second.stamp = ++clock_;
    return true;
  }
  const std::size_t bytes = state_copy::bytes_for(from.layout(), 0);
  if (!make_room(bytes)) {
    ++refusals_;
    return false;
  }
  entry e;
  try {
    e.copy = state_copy::take(from, where, 0);
  } catch (...) {
    budget_.release(pool_, bytes);  // a failed copy holds nothing; the caller sees a refusal
    ++refusals_;
    return false;
  }
  e.stamp = ++clock_;
  bytes_ += bytes;
  anchors_.emplace(pos, std::move(e));
  return true;
}

bool anchor_set::make_room(std::size_t bytes) {
  while (!budget_.reserve(pool_, bytes)) {
    if (anchors_.size() <= keep_newest_) return false;
    // The newest keep_newest_ anchors are protected.
    std::vector<std::uint64_t> stamps;
    for (const auto& [pos, e] : anchors_) stamps.push_back(e.stamp);
    std::sort(stamps.begin(), stamps.end(), std::greater<>());
    const std::uint64_t protected_from = keep_newest_ == 0 ? ~0ULL : stamps[keep_newest_ - 1];
    // Losing the anchor at p sends a resume that would land on p to the anchor below it:
    // p - below(p) more tokens to prefill. Drop the cheapest; the oldest among equals.
    auto victim = anchors_.end();
    std::size_t best_cost = ~std::size_t{0};
    std::size_t below = 0;
    for (auto it = anchors_.begin(); it != anchors_.end(); ++it) {
      const std::size_t cost = it->first - below;
      below = it->first;
      if (it->second.stamp >= protected_from) continue;
      if (cost < best_cost || (cost == best_cost && it->second.stamp < victim->second.stamp)) {
        best_cost = cost;
        victim = it;
      }
    }
    if (victim == anchors_.end()) return false;
    erase(victim);
    ++evictions_;
  }
  return true;
}

void anchor_set::erase(std::map<std::size_t, entry>::iterator it) {
  const std::size_t b = it->second.copy.bytes();
  budget_.release(pool_, b);
  bytes_ -= b;
  anchors_.erase(it);
}

std::optional<state_copy> anchor_set::extract(std::size_t pos) {
  auto it = anchors_.find(pos);
  if (it == anchors_.end()) return std::nullopt;
  state_copy c = std::move(it->second.copy);
  budget_.release(pool_, c.bytes());
  bytes_ -= c.bytes();
  anchors_.erase(it);
  return c;
}

bool anchor_set::adopt(std::size_t pos, state_copy copy) {
  if (anchors_.count(pos)) {
    anchors_[pos].stamp = ++clock_;
    return true;
  }
  const std::size_t bytes = copy.bytes();
  if (!make_room(bytes)) {
    ++refusals_;
    return false;
  }
  entry e;
  e.copy = std::move(copy);
  e.stamp = ++clock_;
  bytes_ += bytes;
  anchors_.emplace(pos, std::move(e));
  return true;
}

std::optional<std::size_t> anchor_set::best_at_or_below(std::size_t limit) const {
  auto it = anchors_.upper_bound(limit);
  if (it == anchors_.begin()) return std::nullopt;
  return std::prev(it)->first;
}

const state_copy* anchor_set::at(std::size_t pos) const {
  auto it = anchors_.find(pos);
  return it == anchors_.end() ? nullptr : &it->second.copy;
}

void anchor_set::drop_above(std::size_t pos) {
  while (!anchors_.empty() && std::prev(anchors_.end())->first > pos) erase(std::prev(anchors_.end()));
}

void anchor_set::clear() {
  while (!anchors_.empty()) erase(anchors_.begin());
}

std::map<std::size_t, std::uint64_t> anchor_set::positions() const {
  std::map<std::size_t, std::uint64_t> out;
  for (const auto& [pos, e] : anchors_) out[pos] = e.stamp;
  return out;
}

}  // namespace anchorage
