#pragma once
// The queries a lookup drafter asks the suffix store: the longest suffix of the recent tokens
// found in the log and what followed it, and a greedy draft along the most frequent
// continuation (SuffixDecoding, arXiv 2411.04975). Exact over every id in the log: the suffix
// array answers for the ids it covers, and a linear scan for those appended since.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/suffix/suffix_index.hpp"

namespace anchorage {

// The log as the queries see it: n ids in segments (seg_starts ascending, the first 0), and an
// index over a prefix of them (index.end() <= n, cut at the same segment starts). The ids may
// lie in two parts: positions [0, split) in `ids`, positions [split, n) in `tail` (a reader's
// snapshot and the ids appended since, runtime/suffix/suffix_view.hpp); the index's ids must lie
// in the first part (index.end() <= split). With the default split every id is in `ids`.
struct suffix_corpus {
  const token_id* ids = nullptr;
  std::size_t n = 0;
  const std::vector<std::size_t>* seg_starts = nullptr;
  const suffix_index* index = nullptr;
  const token_id* tail = nullptr;
  std::size_t split = SIZE_MAX;

  token_id at(std::size_t p) const { return p < split ? ids[p] : tail[p - split]; }
};

struct suffix_query_options {
  std::size_t max_match = 64;          // the longest suffix of `recent` looked for
  std::size_t max_continuations = 16;  // longest_match reports at most this many, the most frequent
  std::size_t propose_min_match = 2;   // propose drafts nothing from a shorter match
  double min_probability = 0.1;        // propose stops when the draft's estimated chance falls below
  // Past this many suffix-array slots propose counts continuations by binary search over the
  // range; at or below it, it follows each occurrence through the ids themselves.
  std::size_t explicit_limit = 1024;
};

struct suffix_continuation {
  token_id id = 0;
  std::uint64_t count = 0;  // occurrences of the match followed by id
};

struct suffix_match {
  std::size_t length = 0;         // 0: no suffix of at least min_len ids occurs followed by an id
  std::uint64_t occurrences = 0;  // occurrences of the match followed by an id
  std::vector<suffix_continuation> continuations;  // count descending, then id ascending
};

// The longest suffix of recent[0, n) of at least min_len ids (and at most max_match) that occurs
// in one segment of the corpus followed by at least one more id of that segment, and those ids.
suffix_match longest_match(const suffix_corpus& corpus, const token_id* recent, std::size_t n,
                           std::size_t min_len, const suffix_query_options& options);

// Up to max_draft ids: from the longest match (at least propose_min_match long), the most
// frequent continuation (ties: the smaller id), then the most frequent continuation of the match
// extended by it, and so on, while the product of each step's count / total stays at least
// min_probability. Empty when there is no match: zero drafts is a normal answer.
// Never an image's row (a negative id, runtime/core/token.hpp; a corpus of a request's own
// prompt holds them): such a continuation is never chosen, but its occurrences count in the
// step's total, and a step that only an image's rows follow ends the draft before them. A match
// may run through an image's rows (equal rows: the same image).
std::vector<token_id> propose(const suffix_corpus& corpus, const token_id* recent, std::size_t n,
                              std::size_t max_draft, const suffix_query_options& options);

}  // namespace anchorage
