#pragma once
// The persistent suffix store (docs/SUFFIX_STORE.md; the seed's §13.10): an append-only log of
// the token ids the engine read and wrote, never text, with a suffix array over it that a lookup
// drafter asks for the longest match of the recent tokens and what followed it.
//
// Where: `dir` (the caller's: <cache-dir>/suffix or a user directory, never inside the
// repository), mode 0700, one log per tokenizer, "suffix-<digest hex>.log", mode 0600.
// Crash safety: records carry a crc32; a torn tail (a kill -9 mid-append) is cut at open. A
// forget rewrites the log atomically (tmp, fsync, rename, directory fsync).
// Failures are soft: a store that cannot open is refused (status() says why) and then reads
// and writes nothing; the caller runs without it.
//
// Not thread-safe: one owner (the board or its actor).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"
#include "runtime/core/token.hpp"
#include "runtime/suffix/suffix_dedupe.hpp"
#include "runtime/suffix/suffix_file.hpp"
#include "runtime/suffix/suffix_index.hpp"
#include "runtime/suffix/suffix_match.hpp"

namespace anchorage {

struct suffix_store_options {
  std::string dir;
  std::uint64_t tokenizer_digest = 0;
  std::uint64_t cap_bytes = std::uint64_t{192} << 20;  // --suffix-store-mb
  std::size_t rebuild_min_ids = 65536;  // the index is rebuilt once this many ids are unindexed...
  double rebuild_fraction = 0.125;      // ...and at least this fraction of the indexed ones
  bool sync_appends = false;            // fdatasync after each add (off: a kill -9 loses nothing)
  std::size_t dedupe_window = 4;        // the last requests an add is compared with
  suffix_query_options query;
};

struct suffix_store_stats {
  std::uint64_t bytes = 0;  // the log's size on disk
  std::uint64_t ids = 0;
  std::uint64_t segments = 0;
  std::uint64_t ids_appended = 0;  // since open, by add
  std::uint64_t ids_skipped = 0;   // since open, by the dedupe
  std::uint64_t adds = 0;
  std::uint64_t forgets = 0;         // oldest halves forgotten
  std::uint64_t torn_tails_cut = 0;  // at open
  std::uint64_t torn_bytes_cut = 0;
  std::uint64_t rebuilds = 0;           // suffix-array builds
  std::uint64_t indexed_ids = 0;        // ids the suffix array covers
  std::uint64_t lookups = 0, hits = 0;  // longest_match and propose calls; those that matched
  std::uint64_t write_failures = 0;
  double last_rebuild_ms = 0;
};

// What one add did.
struct suffix_add_report {
  std::size_t appended = 0;
  std::size_t skipped = 0;  // held by a recent request
  bool continued = false;   // joined to the log's last segment
  bool forgot = false;      // the cap made it forget the oldest half first
};

class suffix_store {
 public:
  enum class state { open, refused };

  // Opens (or creates) the store: the directory made 0700, the log 0600, a torn tail cut, the
  // index built. A failure leaves the store refused; status() says why.
  explicit suffix_store(suffix_store_options options);
  suffix_store(const suffix_store&) = delete;
  suffix_store& operator=(const suffix_store&) = delete;

  state current() const { return state_; }
  bool is_open() const { return state_ == state::open; }
  const status& why() const { return status_; }
  std::string path() const;

  // Adds one request's ids (its prompt then its output): only what none of the last
  // dedupe_window requests already added is appended. Only text ids are: an image's rows (their
  // negative key ids, runtime/core/token.hpp; any id < 0) never enter the log, and each run of
  // them cuts the request there into segments of their own, so that no match and no draft
  // crosses an image (the dedupe still compares the whole request, rows included). A refused
  // store adds nothing; a failed write is counted and the store stays as it was.
  suffix_add_report add(const std::vector<token_id>& tokens);

  suffix_match longest_match(const std::vector<token_id>& recent, std::size_t min_len);
  std::vector<token_id> propose(const std::vector<token_id>& recent, std::size_t max_draft);

  // Rebuilds the suffix array over every id now (add does it in batches).
  void rebuild();

  // Empties the log (rewritten atomically as its header alone) and the index; the dedupe forgets
  // every request. On a failed write the store stays as it was (counted as a write failure).
  status clear();

  suffix_store_stats stats() const;
  const std::vector<token_id>& ids() const { return ids_; }
  const std::vector<std::size_t>& segment_starts() const { return seg_starts_; }
  // The index now: immutable, shared with the readers' snapshots (suffix_snapshot.hpp); a
  // rebuild installs a new one and leaves the old to whoever still holds it.
  std::shared_ptr<const suffix_index> index() const { return index_; }

 private:
  void refuse(std::string why);
  void open_log();
  status forget_oldest_half();
  void maybe_rebuild();
  suffix_corpus corpus() const { return {ids_.data(), ids_.size(), &seg_starts_, index_.get()}; }

  suffix_store_options options_;
  state state_ = state::open;
  status status_;
  suffix_file::log_handle log_;
  std::vector<token_id> ids_;
  std::vector<std::size_t> seg_starts_;
  std::shared_ptr<const suffix_index> index_ = std::make_shared<const suffix_index>();
  suffix_dedupe dedupe_;
  suffix_store_stats stats_;
};

}  // namespace anchorage
