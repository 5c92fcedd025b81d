#include "runtime/suffix/suffix_array.hpp"

#include <algorithm>
#include <cassert>
#include <cstddef>

namespace anchorage {
namespace {

using index = std::int32_t;

// Types: S when the suffix at i is smaller than the one at i + 1, L otherwise; the sentinel's is
// S. An LMS position is an S position whose left neighbour is L.
struct sais_types {
  std::vector<unsigned char> s;
  bool lms(index i) const {
    return i > 0 && s[static_cast<std::size_t>(i)] && !s[static_cast<std::size_t>(i - 1)];
  }
};

// Each symbol's bucket: its first slot (end == false) or one past its last (end == true).
void fill_buckets(const index* t, index n, std::vector<index>& bucket, bool end) {
  std::fill(bucket.begin(), bucket.end(), 0);
  for (index i = 0; i < n; ++i) ++bucket[static_cast<std::size_t>(t[i])];
  index sum = 0;
  for (auto& b : bucket) {
    const index count = b;
    b = end ? sum + count : sum;
    sum += count;
  }
}

// From the LMS suffixes placed at their buckets' ends: L suffixes left to right from the bucket
// starts, then S suffixes right to left from the bucket ends.
void induce(const index* t, index* sa, index n, const sais_types& types, std::vector<index>& bucket) {
  fill_buckets(t, n, bucket, false);
  for (index i = 0; i < n; ++i) {
    const index j = sa[i] - 1;
    if (sa[i] > 0 && !types.s[static_cast<std::size_t>(j)]) sa[bucket[static_cast<std::size_t>(t[j])]++] = j;
  }
  fill_buckets(t, n, bucket, true);
  for (index i = n - 1; i >= 0; --i) {
    const index j = sa[i] - 1;
    if (sa[i] > 0 && types.s[static_cast<std::size_t>(j)]) sa[--bucket[static_cast<std::size_t>(t[j])]] = j;
  }
}

// True when the LMS substrings starting at a and b (each up to and including the next LMS
// position) are equal in symbols and types.
bool same_lms_substring(const index* t, const sais_types& types, index a, index b) {
  for (index d = 0;; ++d) {
    if (t[a + d] != t[b + d] ||
        types.s[static_cast<std::size_t>(a + d)] != types.s[static_cast<std::size_t>(b + d)])
      return false;
    if (d > 0 && (types.lms(a + d) || types.lms(b + d))) return types.lms(a + d) && types.lms(b + d);
  }
}

void sais(const index* t, index* sa, index n, index alphabet) {
  sais_types types;
  types.s.assign(static_cast<std::size_t>(n), 0);
  types.s[static_cast<std::size_t>(n - 1)] = 1;
  for (index i = n - 2; i >= 0; --i) {
    const auto u = static_cast<std::size_t>(i);
    types.s[u] = t[i] < t[i + 1] || (t[i] == t[i + 1] && types.s[u + 1]);
  }
  std::vector<index> bucket(static_cast<std::size_t>(alphabet));

  // 1. Sort the LMS substrings: place the LMS positions at their buckets' ends and induce.
  std::fill(sa, sa + n, -1);
  fill_buckets(t, n, bucket, true);
  for (index i = 1; i < n; ++i)
    if (types.lms(i)) sa[--bucket[static_cast<std::size_t>(t[i])]] = i;
  induce(t, sa, n, types, bucket);

  // 2. Name them: equal substrings get equal names, in sorted order.
  index lms_count = 0;
  for (index i = 0; i < n; ++i)
    if (types.lms(sa[i])) sa[lms_count++] = sa[i];
  std::fill(sa + lms_count, sa + n, -1);
  index names = 0, previous = -1;
  for (index i = 0; i < lms_count; ++i) {
    const index pos = sa[i];
    if (previous < 0 || !same_lms_substring(t, types, pos, previous)) {
      ++names;
      previous = pos;
    }
    sa[lms_count + pos / 2] = names - 1;  // LMS positions are at least 2 apart: no collision
  }
  for (index i = n - 1, j = n - 1; i >= lms_count; --i)
    if (sa[i] >= 0) sa[j--] = sa[i];

  // 3. Sort the LMS suffixes: the reduced text (names in position order) recursively when two
  // substrings share a name, directly otherwise.
  index* reduced = sa + n - lms_count;
  if (names < lms_count)
    sais(reduced, sa, lms_count, names);
  else
    for (index i = 0; i < lms_count; ++i) sa[reduced[i]] = i;

  // 4. Place the sorted LMS suffixes at their buckets' ends and induce the rest.
  for (index i = 1, j = 0; i < n; ++i)
    if (types.lms(i)) reduced[j++] = i;
  for (index i = 0; i < lms_count; ++i) sa[i] = reduced[sa[i]];
  std::fill(sa + lms_count, sa + n, -1);
  fill_buckets(t, n, bucket, true);
  for (index i = lms_count - 1; i >= 0; --i) {
    const index j = sa[i];
    sa[i] = -1;
    sa[--bucket[static_cast<std::size_t>(t[j])]] = j;
  }
  induce(t, sa, n, types, bucket);
}

}  // namespace

std::vector<std::int32_t> build_suffix_array(const std::vector<std::int32_t>& text, std::int32_t alphabet) {
  assert(!text.empty() && text.back() == 0);
  assert(text.size() < (std::size_t{1} << 31));
  const auto n = static_cast<index>(text.size());
  std::vector<std::int32_t> sa(text.size());
  if (n == 1) return sa;
  sais(text.data(), sa.data(), n, alphabet);
  return sa;
}

}  // namespace anchorage
