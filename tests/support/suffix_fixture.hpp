#pragma once
// The suffix store's test helpers: a brute-force reference for its queries (every position
// tried, no index), random logs, and store options on a temp directory.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/suffix/suffix_store.hpp"

namespace anchorage::testing {

// A log as plain data: ids in segments.
struct naive_log {
  std::vector<token_id> ids;
  std::vector<std::size_t> seg_starts;

  void add_segment(const std::vector<token_id>& seg) {
    if (seg.empty()) return;
    seg_starts.push_back(ids.size());
    ids.insert(ids.end(), seg.begin(), seg.end());
  }
  std::size_t seg_start(std::size_t p) const {
    return *(std::upper_bound(seg_starts.begin(), seg_starts.end(), p) - 1);
  }
};

struct naive_answer {
  std::size_t length = 0;
  std::map<token_id, std::uint64_t> counts;
  std::vector<std::size_t> starts;  // where the match starts, for each occurrence counted
};

// The longest suffix of `recent` (min_len <= length <= max_match) occurring inside one segment
// and followed there by one more id, found by trying every length and every position.
inline naive_answer naive_longest(const naive_log& log, const std::vector<token_id>& recent,
                                  std::size_t min_len, std::size_t max_match) {
  naive_answer a;
  const std::size_t n = recent.size();
  for (std::size_t l = std::min(n, max_match); l >= std::max<std::size_t>(min_len, 1); --l) {
    for (std::size_t c = l; c < log.ids.size(); ++c) {
      if (log.seg_start(c) > c - l) continue;  // the occurrence and its continuation in one segment
      if (std::equal(recent.end() - static_cast<std::ptrdiff_t>(l), recent.end(),
                     log.ids.begin() + static_cast<std::ptrdiff_t>(c - l))) {
        ++a.counts[log.ids[c]];
        a.starts.push_back(c - l);
      }
    }
    if (!a.counts.empty()) {
      a.length = l;
      return a;
    }
    if (l == 1) break;
  }
  return a;
}

// The greedy draft by the same rule as propose(), over explicit occurrence lists.
inline std::vector<token_id> naive_propose(const naive_log& log, const std::vector<token_id>& recent,
                                           std::size_t max_draft, const suffix_query_options& o) {
  std::vector<token_id> draft;
  naive_answer a = naive_longest(log, recent, o.propose_min_match, o.max_match);
  if (a.length == 0) return draft;
  std::vector<std::size_t> starts = a.starts;
  std::size_t depth = a.length;
  double p = 1.0;
  while (draft.size() < max_draft) {
    std::map<token_id, std::uint64_t> counts;
    std::uint64_t total = 0;
    for (std::size_t s : starts) {
      const std::size_t c = s + depth;
      if (c < log.ids.size() && log.seg_start(c) <= s) {
        ++counts[log.ids[c]];
        ++total;
      }
    }
    if (total == 0) break;
    token_id best = 0;
    std::uint64_t best_count = 0;
    for (const auto& [id, count] : counts)
      if (count > best_count) best = id, best_count = count;
    p *= static_cast<double>(best_count) / static_cast<double>(total);
    if (p < o.min_probability) break;
    draft.push_back(best);
    std::vector<std::size_t> kept;
    for (std::size_t s : starts) {
      const std::size_t c = s + depth;
      if (c < log.ids.size() && log.seg_start(c) <= s && log.ids[c] == best) kept.push_back(s);
    }
    starts = kept;
    ++depth;
  }
  return draft;
}

inline std::vector<token_id> random_ids(std::mt19937& rng, std::size_t n, token_id alphabet) {
  std::uniform_int_distribution<token_id> d(0, alphabet - 1);
  std::vector<token_id> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Store options on `dir` with a fixed digest and the index rebuilt after `rebuild_min_ids`.
inline suffix_store_options suffix_options(const std::string& dir, std::uint64_t digest = 0x5eedf00dULL,
                                           std::size_t rebuild_min_ids = 65536) {
  suffix_store_options o;
  o.dir = dir;
  o.tokenizer_digest = digest;
  o.rebuild_min_ids = rebuild_min_ids;
  return o;
}

}  // namespace anchorage::testing
