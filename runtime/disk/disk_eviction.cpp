#include "runtime/disk/disk_eviction.hpp"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <tuple>

namespace anchorage {

namespace {
constexpr std::int64_t seconds_per_day = 24 * 3600;
}  // namespace

std::int64_t system_eviction_clock::now_s() const {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::uint64_t disk_budget_bytes_from_gb(double gb) {
  assert(gb >= 0);
  return static_cast<std::uint64_t>(gb * static_cast<double>(1ULL << 30));
}

disk_eviction::disk_eviction(const eviction_clock& clock, disk_eviction_options options)
    : clock_(clock), options_(options) {}

bool disk_eviction::add(std::uint64_t id, const eviction_entry& entry) {
  if (entry.bytes == 0 || nodes_.count(id) != 0) return false;
  if (entry.parent) {
    auto p = nodes_.find(*entry.parent);
    if (p == nodes_.end()) return false;
    auto& ch = p->second.children;
    ch.insert(std::upper_bound(ch.begin(), ch.end(), id), id);
  }
  nodes_.emplace(id, node{entry, {}});
  held_bytes_ += entry.bytes;
  return true;
}

bool disk_eviction::touch(std::uint64_t id) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return false;
  it->second.entry.hits += 1;
  it->second.entry.last_use_s = clock_.now_s();
  return true;
}

std::vector<std::uint64_t> disk_eviction::remove(std::uint64_t id) {
  std::vector<std::uint64_t> ids;
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return ids;
  std::unordered_set<std::uint64_t> taken;
  append_subtree(id, taken, ids);
  if (auto parent = it->second.entry.parent) {
    auto& ch = nodes_.at(*parent).children;
    ch.erase(std::find(ch.begin(), ch.end(), id));
  }
  for (auto r : ids) {
    held_bytes_ -= nodes_.at(r).entry.bytes;
    nodes_.erase(r);
  }
  return ids;
}

const eviction_entry* disk_eviction::find(std::uint64_t id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second.entry;
}

double disk_eviction::value(std::uint64_t id) const { return value_at(nodes_.at(id).entry, clock_.now_s()); }

double disk_eviction::value_at(const eviction_entry& e, std::int64_t now) const {
  const double base =
      static_cast<double>(e.hits + 1) * static_cast<double>(e.tokens_saved) / static_cast<double>(e.bytes);
  // A clock that went backwards counts as no time unused.
  const std::int64_t days = std::max<std::int64_t>(0, (now - e.last_use_s) / seconds_per_day);
  return std::ldexp(base, -static_cast<int>(std::min<std::int64_t>(days, 4096)));
}

std::uint64_t disk_eviction::append_subtree(std::uint64_t id, std::unordered_set<std::uint64_t>& taken,
                                            std::vector<std::uint64_t>& out) const {
  if (taken.count(id) != 0) return 0;
  std::uint64_t bytes = 0;
  const node& n = nodes_.at(id);
  for (auto c : n.children) bytes += append_subtree(c, taken, out);
  taken.insert(id);
  out.push_back(id);
  return bytes + n.entry.bytes;
}

std::vector<std::uint64_t> disk_eviction::plan_evictions(
    std::uint64_t free_bytes, std::uint64_t incoming_bytes,
    const std::unordered_set<std::uint64_t>& keep) const {
  const std::int64_t now = clock_.now_s();

  struct ranked {
    double value;
    std::int64_t last_use_s;
    std::uint64_t id;
  };
  std::vector<ranked> order;
  order.reserve(nodes_.size());
  for (const auto& [id, n] : nodes_)
    if (keep.count(id) == 0) order.push_back({value_at(n.entry, now), n.entry.last_use_s, id});

  std::vector<std::uint64_t> plan;
  std::unordered_set<std::uint64_t> taken;
  std::uint64_t held = held_bytes_;
  auto evict = [&](std::uint64_t id) {
    const std::uint64_t freed = append_subtree(id, taken, plan);
    held -= freed;
    free_bytes += freed;
  };

  // 1. Lifetime: every entry unused longer than it, older last use first, then lower id.
  std::sort(order.begin(), order.end(), [](const ranked& a, const ranked& b) {
    return std::tie(a.last_use_s, a.id) < std::tie(b.last_use_s, b.id);
  });
  for (const auto& r : order)
    if (now - r.last_use_s > options_.lifetime_s) evict(r.id);

  // 2. Budget and floor: the least valuable first. Values are fixed at `now`, so one sort does.
  std::stable_sort(order.begin(), order.end(),
                   [](const ranked& a, const ranked& b) { return a.value < b.value; });
  for (const auto& r : order) {
    if (held + incoming_bytes <= options_.budget_bytes &&
        free_bytes >= options_.min_free_bytes + incoming_bytes)
      break;
    evict(r.id);
  }
  return plan;
}

}  // namespace anchorage
