#pragma once
// The summaries the compaction worker wrote ahead (docs/COMPACTION.md, "The compaction worker"),
// each keyed by the session, the held conversation's tokens up to its end anchor and the
// continuation turn it was written from, with the sampling it was written with. A compaction
// request of that session at that end anchor, with that turn and sampling it allows, is answered
// from it without the engine; any other is not (a conversation that moved on has another end).
// The keys are the tokens themselves, not digests: two conversations never share a summary.
// Not thread-safe: one owner (the board's slots).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/board_job.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

struct prewritten_summary {
  std::string session_key;
  std::vector<token_id> end_rows;  // the conversation's tokens up to its end anchor
  std::vector<token_id> turn;      // the continuation turn it was written from
  double temperature = 1.0;
  double top_p = 1.0;
  std::uint64_t seed = 0;
  long max_tokens = 0;                          // what the run allowed
  std::vector<token_id> output;                 // the summary's ids, as the session emitted them
  run_finish finish_reason = run_finish::stop;  // stop or length
};

class compaction_prewrites {
 public:
  explicit compaction_prewrites(std::size_t capacity = 8) : capacity_(capacity) {}

  // Keeps `s` (replacing the session's earlier one; the oldest goes past the capacity).
  void put(prewritten_summary s);
  // The summary for this session, end and turn, or null.
  const prewritten_summary* find(const std::string& session_key, const std::vector<token_id>& end_rows,
                                 const std::vector<token_id>& turn) const;
  bool has(const std::string& session_key, const std::vector<token_id>& end_rows,
           const std::vector<token_id>& turn) const {
    return find(session_key, end_rows, turn) != nullptr;
  }
  // Whether `job` (the request's sampling and limits) may be answered with `s`: the same
  // temperature and top_p (an omitted one is the default both ways), no explicit seed other than
  // s's, no logit bias or stop strings, and an output the request's max_tokens covers (a summary
  // cut by its own limit answers only a request that allows no more).
  static bool answers(const prewritten_summary& s, const board_job& job);

  std::size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }

 private:
  std::size_t capacity_;
  std::vector<prewritten_summary> entries_;  // oldest first
};

}  // namespace anchorage
