#pragma once
// The response cache (seed §13.2: "the tokens of an identical greedy request", memory, off by
// default; --response-cache-mb). Each entry is a response_key and the output ids and finish
// reason of the generation that answered it; a request with an equal key is answered with them,
// replayed through the parser without the engine (board_runner). Least recently used entries go
// first when a new one needs room within the byte budget; an entry larger than the whole budget
// is refused. A digest of the key picks the bucket, and every entry in it is compared field by
// field, the prompt token by token: a digest collision is a miss, never another prompt's answer.
//
// Not thread-safe: one owner (the board's slots, which share one).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/cache_source.hpp"
#include "protocol/cache_stats.hpp"
#include "runtime/cache/response_key.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

struct cached_response {
  std::vector<token_id> output;  // the ids the session emitted (generation_session::output_ids)
  run_finish finish_reason = run_finish::stop;  // stop or length
};

class response_cache {
 public:
  using hasher = std::function<std::uint64_t(const response_key&)>;
  // `limit_bytes` 0 keeps nothing. `hash` picks the bucket (tests force collisions with it).
  explicit response_cache(std::size_t limit_bytes, hasher hash = response_key_digest);

  // The answer kept for `key` (now the most recently used), or nullopt; counts a hit or a miss.
  std::optional<cached_response> find(const response_key& key);
  // Keeps `answer` for `key` (replacing an equal key's), evicting the least recently used
  // entries until it fits. False (nothing changed but the refusal count) when it cannot fit.
  bool put(response_key key, cached_response answer);
  void clear();

  std::size_t size() const { return entries_.size(); }
  std::size_t bytes() const { return bytes_; }
  std::size_t limit_bytes() const { return limit_; }
  response_stats stats() const;
  // The bytes an entry of `key` and `answer` is charged.
  static std::size_t entry_bytes(const response_key& key, const cached_response& answer);

 private:
  struct entry {
    std::uint64_t digest = 0;
    response_key key;
    cached_response answer;
    std::size_t bytes = 0;
  };
  using lru_list = std::list<entry>;  // most recently used first

  lru_list::iterator locate(const response_key& key, std::uint64_t digest);
  void erase(lru_list::iterator it);

  std::size_t limit_ = 0;
  hasher hash_;
  lru_list entries_;
  std::unordered_multimap<std::uint64_t, lru_list::iterator> buckets_;
  std::size_t bytes_ = 0;
  long hits_ = 0, misses_ = 0, evictions_ = 0, stores_ = 0, refusals_ = 0;
};

}  // namespace anchorage
