#pragma once
// What the server held, and why a request resumed less deep than that (docs/CACHES.md, "Miss
// reasons"). The record keeps the sequences the slots finished recently (a turn's rows: its
// prompt and its forwarded output, with the end record its end anchor aligns by), bounded in
// entries and tokens, oldest out first; the board's slots share one. classify_miss() compares a
// request's prompt with it once the request's start is known.
//
// Not thread-safe: the board's thread owns it (its slots' coordinators all run there).
#include <cstddef>
#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/miss_stats.hpp"
#include "runtime/text/output/end_alignment.hpp"

namespace anchorage {

struct held_sequence {
  end_record rows;          // rows.rows: the tokens; rows.prompt_len: where the output starts
  std::string session;      // its session key ("" when none)
  bool end_anchor = false;  // an end anchor was made at rows.rows.size()
  bool refused = false;     // a budget refused a copy the tiers would have kept of it
};

class held_record {
 public:
  explicit held_record(std::size_t max_entries = 64, std::size_t max_tokens = std::size_t{1} << 20);

  // Adds a finished sequence, newest. An entry it extends (the same conversation's earlier
  // turn, or the same rows) goes; then the oldest go until the bounds hold.
  void add(held_sequence s);
  void clear();

  const std::deque<held_sequence>& entries() const { return entries_; }
  std::size_t tokens() const { return tokens_; }

 private:
  std::size_t max_entries_, max_tokens_;
  std::deque<held_sequence> entries_;  // oldest first
  std::size_t tokens_ = 0;
};

// One request's start as its coordinator saw it.
struct request_start {
  std::size_t resumed = 0;      // the depth it resumed at (0: cold)
  std::string session;          // its session key
  bool failed_checks = false;   // an offer taken was refused by its read's checks
  bool stale = false;           // an offer taken was gone when its read came
  std::size_t declined_at = 0;  // the deepest start a tier declined by the cost rule
  std::size_t foreign_at = 0;   // the deepest line only another engine's disk folder holds
  std::size_t failed_at = 0;    // the deepest offer taken whose read failed (checks or stale)
};

struct miss {
  miss_reason reason = miss_reason::no_shared_prefix;
  std::size_t tokens = 0;  // shared less resumed
  std::size_t shared = 0;  // the deepest the prompt shared with what was held (below its last token)
};

// Why `prompt` resumed at s.resumed when it shared more with what `held` holds, or nothing when
// it resumed as deep as it shared. A prompt that shares nothing is no_shared_prefix at 0 tokens.
// The shared depth of a held sequence is its end anchor when the prompt aligns to it (`end_align`:
// the end anchor's rules), else the tokens in common, below the prompt's last token; another
// engine's line (s.foreign_at) counts as shared too. The first rule that applies, in miss_reason's
// order: the read failed its checks, the offer was stale, a tier declined by the cost rule above
// the start, only another engine's folder holds the shared depth, the held line at or below it
// (the end anchor, or the grid line of `grid` within the prompt part) was lost (budget_refused
// when a budget refused its copy, else evicted), the session's own sequence parts from the
// prompt below its end (client_rewrote), nothing resumable was shared (no_shared_prefix), else
// between_anchors.
std::optional<miss> classify_miss(const held_record& held, const std::vector<token_id>& prompt,
                                  const request_start& s, std::size_t grid, bool end_align);

// A coordinator's miss reasons over its requests, one at a time: expect() a request, planned()
// once its tiers offered, judged() when it begins (its miss counted), ended() with the rows it
// leaves, finished() to record them, marked `refused` when a budget refused a copy of them while
// the request ran (device_tier::refused_this_run).
class miss_judge {
 public:
  miss_judge() : held_(std::make_shared<held_record>()) {}

  void share_record(std::shared_ptr<held_record> held) { held_ = std::move(held); }
  const held_record& held() const { return *held_; }
  void clear_record() { held_->clear(); }

  void expect(const std::string& session);
  void planned(std::size_t declined_at, std::size_t foreign_at);
  // A taken offer's read failed: its checks (failed_checks) or the offer was gone (stale).
  // An offer taken at `at` whose read failed its checks, or found it gone.
  void read_failed(bool failed_checks, std::size_t at) {
    (failed_checks ? start_.failed_checks : start_.stale) = true;
    start_.failed_at = std::max(start_.failed_at, at);
  }
  void judged(std::size_t resumed, const std::vector<token_id>& prompt, std::size_t grid, bool end_align);
  void ended(held_sequence s) { ending_ = std::move(s); }
  void finished(bool refused);

  // The running request's miss, once judged; nothing when it resumed as deep as it shared.
  const std::optional<miss>& last() const { return last_; }
  const miss_stats& counts() const { return counts_; }

 private:
  std::shared_ptr<held_record> held_;
  request_start start_;                  // the running request's, from planned() and read_failed()
  bool judging_ = false;                 // judged() counts the running request's miss
  std::optional<miss> last_;             // what judged() found
  miss_stats counts_;                    // this coordinator's
  std::optional<held_sequence> ending_;  // the running request's rows, recorded at finished()
};

}  // namespace anchorage
