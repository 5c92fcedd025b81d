#include "runtime/cache/response_cache.hpp"

#include <iterator>
#include <utility>

namespace anchorage {

response_cache::response_cache(std::size_t limit_bytes, hasher hash)
    : limit_(limit_bytes), hash_(std::move(hash)) {}

std::size_t response_cache::entry_bytes(const response_key& key, const cached_response& answer) {
  return sizeof(entry) + key.bytes() + answer.output.size() * sizeof(token_id);
}

response_cache::lru_list::iterator response_cache::locate(const response_key& key, std::uint64_t digest) {
  auto [b, e] = buckets_.equal_range(digest);
  for (auto it = b; it != e; ++it)
    if (it->second->key == key) return it->second;
  return entries_.end();
}

std::optional<cached_response> response_cache::find(const response_key& key) {
  const auto it = locate(key, hash_(key));
  if (it == entries_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  entries_.splice(entries_.begin(), entries_, it);  // iterators stay valid
  return it->answer;
}

void response_cache::erase(lru_list::iterator it) {
  auto [b, e] = buckets_.equal_range(it->digest);
  for (auto bit = b; bit != e; ++bit)
    if (bit->second == it) {
      buckets_.erase(bit);
      break;
    }
  bytes_ -= it->bytes;
  entries_.erase(it);
}

bool response_cache::put(response_key key, cached_response answer) {
  const std::size_t need = entry_bytes(key, answer);
  if (need > limit_) {
    ++refusals_;
    return false;
  }
  const std::uint64_t digest = hash_(key);
  if (auto old = locate(key, digest); old != entries_.end()) erase(old);
  while (bytes_ + need > limit_ && !entries_.empty()) {
    erase(std::prev(entries_.end()));
    ++evictions_;
  }
  entries_.push_front(entry{digest, std::move(key), std::move(answer), need});
  buckets_.emplace(digest, entries_.begin());
  bytes_ += need;
  ++stores_;
  return true;
}

void response_cache::clear() {
  entries_.clear();
  buckets_.clear();
  bytes_ = 0;
}

response_stats response_cache::stats() const {
  response_stats s;
  s.entries = entries_.size();
  s.bytes = bytes_;
  s.limit_bytes = limit_;
  s.hits = hits_;
  s.misses = misses_;
  s.evictions = evictions_;
  s.stores = stores_;
  s.refusals = refusals_;
  return s;
}

}  // namespace anchorage
