#pragma once
// What the disk tier writes for one request, decided before its prefill
// (docs/DISK_TIER.md, "What is written"). A pure policy: token ids and line numbers in, a plan out; no file,
// no engine, no clock.
//
// Lines are multiples of the grid, and the ends of images (rule 4). Line b's chunk file holds
// rows [b - grid, b) (an image's end off the grid: the rows from the grid line below); an anchor
// file at b holds the sections at b and is usable only with every chunk below it on disk. A
// line's key is prefix_hash(tokens, b) (runtime/disk/disk_codec.hpp), so equal prefixes give
// equal keys.
//
// The plan for a request with n prompt tokens:
//   last      = the largest line <= min(n, taint)   (rows above the taint are never written)
//   forwarded = the lines b with resume < b <= last (the lines this prefill computes)
//   chunks    = every forwarded line; empty when n < min_tokens
//   anchors   = the forwarded lines picked by the rules below; always a subset of chunks
//               (rule 4 adds its lines to both):
//     1. admit after two: every forwarded line is counted by its key; the longest forwarded line
//        whose count, this request included, is at least 2 gets an anchor.
//     2. first request: a session's first request (n >= min_tokens) gets anchors at the last
//        `first_request_anchors` lines at or below where its last user message starts, because
//        the next session in the same folder parts there. Absent user start: rule skipped.
//     3. branch: a forwarded line p >= grid where an earlier counted prompt went on differently
//        (the key at p was last seen followed by another key at p + grid than this prompt's)
//        gets an anchor at p, the last line both prompts share. An earlier prompt that ended
//        before p + grid did not go on, so it is no branch.
//     4. after an image: every row p with resume < p < n and p <= taint that follows an image's
//        last row (is_image_row) gets a chunk and an anchor, on the grid or off it: a prompt
//        that parts right after an image resumes there (the engine ends a chunk there, so the
//        state is the one a cold prefill passes). Counts nothing.
// A prompt under min_tokens writes nothing and changes no count. Lines at or below the resume
// point are cached somewhere already: they are neither counted nor written. Whether the chunks
// below an anchor are on disk, and whether a named file exists already, is the tier's concern.
//
// Memory: the counts live in an LRU map of at most `capacity` keys (key -> count, the key seen
// next); a key used by a plan becomes the newest, the oldest is dropped past the capacity. A
// dropped key counts from zero again: the policy forgets, it never grows.
//
// Not thread-safe: one owner (the disk tier's admission step).
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

struct disk_admission_options {
  std::size_t min_tokens = 4096;          // prompts shorter than this write nothing
  std::size_t capacity = 65536;           // keys the counting map holds at most (>= 1)
  std::size_t first_request_anchors = 4;  // rule 2's line count
};

// One request, as the caller knows it before the prefill.
struct admission_request {
  std::size_t grid = 1024;                // the prefill's grid (> 0)
  std::size_t resume = 0;                 // the prefill starts here; lines <= it are cached
  std::optional<std::size_t> taint;       // no row at or above it may be written; none: no limit
  bool first_request = false;             // the session's first request
  std::optional<std::size_t> user_start;  // token index where the last user message starts
};

// Lines, ascending, without repeats.
struct admission_plan {
  std::vector<std::size_t> chunks;
  std::vector<std::size_t> anchors;

  bool writes_nothing() const { return chunks.empty(); }
};

class disk_admission {
 public:
  // Throws std::invalid_argument when capacity is 0.
  explicit disk_admission(disk_admission_options options = {});

  // Plans the writes for `tokens` and counts its forwarded lines (the only state it changes).
  // Throws std::invalid_argument when req.grid is 0.
  admission_plan plan(const std::vector<token_id>& tokens, const admission_request& req);

  // How often the line with this key was counted; 0 when unknown or forgotten. Does not make the
  // key the newest.
  std::size_t count_of(std::uint64_t key) const;
  std::size_t size() const { return index_.size(); }
  std::size_t capacity() const { return options_.capacity; }
  const disk_admission_options& options() const { return options_; }
  // Forgets every count (the tier was cleared).
  void clear();

 private:
  struct entry {
    std::uint64_t key = 0;
    std::size_t count = 0;
    std::optional<std::uint64_t> next;  // the key at the next line, as last seen
  };
  // Finds or inserts `key` as the newest, dropping the oldest past the capacity.
  entry& touch(std::uint64_t key);

  disk_admission_options options_;
  std::list<entry> lru_;  // newest first
  std::unordered_map<std::uint64_t, std::list<entry>::iterator> index_;
};

}  // namespace anchorage
