#pragma once
// The disk tier's plain values that travel beyond the disk actor's own messages: its offer (in a
// queued board_job), its stats and the board's staging stats (in cache_stats). No CAF here, so
// board_job.hpp and cache_stats.hpp can include it; disk_messages.hpp registers the types.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/probe.hpp"
#include "protocol/record_format.hpp"

namespace anchorage {

// What the disk can restore for a prompt: tokens [0, line) from its anchor at `line`.
struct disk_offer {
  std::string ns;                // the anchor's namespace ("" for the tier's own)
  std::size_t line = 0;          // the length it restores (a multiple of the grid)
  std::uint64_t key = 0;         // the prompt's prefix hash at `line` (the anchor's name)
  std::uint64_t read_bytes = 0;  // what the read reads: its chunks and the anchor
  std::uint64_t generation = 0;  // the tier's clear count when offered
  double read_s = 0;             // the expected read time at the measured bandwidth
};

// Why restores failed (the wire's tiers.disk.restore_failure_reasons), each failed read counted
// once by the first thing that failed: the entry was gone from the index when the read came, the
// offer was stale (the tier cleared since, or another prompt), the read itself failed (I/O), or a
// file failed a check of the framed record (protocol/record_format.hpp's fault names).
struct disk_restore_failures {
  long missing = 0, stale_offer = 0, io = 0, truncated = 0, bad_magic = 0, bad_version = 0, bad_header = 0,
       foreign_engine = 0, wrong_line = 0, wrong_prefix = 0, wrong_chunks = 0, layout_mismatch = 0,
       bad_crc = 0;

  static constexpr auto fields() {
    using s = disk_restore_failures;
    return std::make_tuple(
        probe::sum("missing", &s::missing), probe::sum("stale_offer", &s::stale_offer),
        probe::sum("io", &s::io), probe::sum("truncated", &s::truncated),
        probe::sum("bad_magic", &s::bad_magic), probe::sum("bad_version", &s::bad_version),
        probe::sum("bad_header", &s::bad_header), probe::sum("foreign_engine", &s::foreign_engine),
        probe::sum("wrong_line", &s::wrong_line), probe::sum("wrong_prefix", &s::wrong_prefix),
        probe::sum("wrong_chunks", &s::wrong_chunks), probe::sum("layout_mismatch", &s::layout_mismatch),
        probe::sum("bad_crc", &s::bad_crc));
  }
  // Every reason's count added up, from the one field list (a reason added there is counted).
  long total() const {
    long n = 0;
    probe::each_field<disk_restore_failures>([&](const auto& d) { n += this->*(d.member); });
    return n;
  }
  // A file that failed a record check: its fault (none: the read itself failed). The spill's
  // own faults never come from a disk file; counted as bad_header should one ever.
  void count(record_format::fault f) {
    using record_format::fault;
    switch (f) {
      case fault::none:
        ++io;
        return;
      case fault::truncated:
        ++truncated;
        return;
      case fault::bad_magic:
        ++bad_magic;
        return;
      case fault::bad_version:
        ++bad_version;
        return;
      case fault::foreign_engine:
        ++foreign_engine;
        return;
      case fault::wrong_line:
        ++wrong_line;
        return;
      case fault::wrong_prefix:
        ++wrong_prefix;
        return;
      case fault::wrong_chunks:
        ++wrong_chunks;
        return;
      case fault::layout_mismatch:
        ++layout_mismatch;
        return;
      case fault::bad_crc:
        ++bad_crc;
        return;
      default:
        ++bad_header;
        return;
    }
  }
};

// What the start-up scan found and did (the wire's tiers.disk.sweep): files indexed, unfinished
// writes (.tmp) reaped, files of another fingerprint or grid swept, damaged files removed (bad
// headers, wrong lengths, missing parents), entries evicted to the limits right after, and the
// scan's wall time.
struct disk_scan_report {
  std::size_t indexed = 0;
  std::size_t tmp_reaped = 0;
  std::size_t foreign_swept = 0;
  std::size_t damaged_removed = 0;
  std::size_t evicted = 0;
  double seconds = 0;

  static constexpr auto fields() {
    using s = disk_scan_report;
    return std::make_tuple(probe::keep("indexed", &s::indexed), probe::keep("tmp_reaped", &s::tmp_reaped),
                           probe::keep("foreign_swept", &s::foreign_swept),
                           probe::keep("damaged_removed", &s::damaged_removed),
                           probe::keep("evicted", &s::evicted), probe::keep("seconds", &s::seconds));
  }
};

// The disk tier's shared level (--remote-cache, runtime/remote/remote_disk.hpp): its pushes to
// Redis behind the local writes and its fetches on a local miss (the wire's tiers.disk.remote).
struct remote_stats {
  bool enabled = false;
  std::string target;  // host:port/db, never the password
  std::string ns;      // the key namespace (the tenant's salt as a digest)
  long pushed_files = 0;
  std::uint64_t pushed_bytes = 0;
  long push_skipped = 0;    // already in Redis
  long push_failures = 0;   // a file not copied (Redis down, slow, full; the local file gone)
  long pushes_out = 0;      // batches at the pusher now
  long fetches = 0;         // local misses that asked Redis
  long hits = 0;            // fetches that indexed a deeper anchor locally
  long misses = 0;          // Redis held nothing deeper
  long failures = 0;        // Redis unreachable, slow, an error; a file missing or damaged
  long timeouts = 0;        // of which past the deadline
  long refused_budget = 0;  // a hit larger than the fetch's budget
  long backed_off = 0;      // asks not made: Redis failed within the retry interval
  long fetched_files = 0;
  std::uint64_t fetched_bytes = 0;
  // The session spill's level: conversations (manifests) pushed, the asks for one a prompt's
  // session and head name, and those that brought one here.
  long spill_pushes = 0;
  long spill_fetches = 0;
  long spill_hits = 0;

  static constexpr auto fields() {
    using s = remote_stats;
    return std::make_tuple(
        probe::keep("enabled", &s::enabled), probe::keep("target", &s::target),
        probe::keep("namespace", &s::ns), probe::keep("pushed_files", &s::pushed_files),
        probe::keep("pushed_bytes", &s::pushed_bytes), probe::keep("push_skipped", &s::push_skipped),
        probe::keep("push_failures", &s::push_failures), probe::keep("pushes_out", &s::pushes_out),
        probe::keep("fetches", &s::fetches), probe::keep("hits", &s::hits), probe::keep("misses", &s::misses),
        probe::keep("failures", &s::failures), probe::keep("timeouts", &s::timeouts),
        probe::keep("refused_budget", &s::refused_budget), probe::keep("backed_off", &s::backed_off),
        probe::keep("fetched_files", &s::fetched_files), probe::keep("fetched_bytes", &s::fetched_bytes),
        probe::keep("spill_pushes", &s::spill_pushes), probe::keep("spill_fetches", &s::spill_fetches),
        probe::keep("spill_hits", &s::spill_hits));
  }
};

// The tier's counters and sizes (JSON only at the wire, from the field list).
struct disk_stats {
  std::size_t entries = 0, chunks = 0, checkpoints = 0;
  std::uint64_t bytes = 0, limit_bytes = 0;
  // The other limits (--disk-lifetime-days, --disk-free-gb, or their live settings) and the file
  // system's free bytes when the stats were taken (0: unreadable).
  std::int64_t lifetime_s = 0;
  std::uint64_t min_free_bytes = 0, fs_free_bytes = 0;
  std::size_t longest_prefix = 0;
  long hits = 0, misses = 0, declined = 0, restore_failures = 0, write_failures = 0, refusals = 0,
       evictions = 0, superseded = 0, files_written = 0;
  std::uint64_t bytes_written = 0, bytes_read = 0;
  // restore_failures by why (restore_failures is their total).
  disk_restore_failures restore_failure_reasons;
  // The chunks' sharing: what the anchors would hold were each stored whole (each anchor's file
  // and every chunk of its chain), and that over the bytes of the files they stand on (each
  // chunk once; 1 without sharing; 0 without an anchor).
  std::uint64_t anchored_bytes = 0;
  double dedup_ratio = 0;
  disk_scan_report sweep;      // the start-up scan's
  long jobs = 0;               // jobs submitted
  std::size_t writes_out = 0;  // jobs at the writer now
  long anchors_planned = 0;
  long long tokens_saved = 0;
  double read_bytes_per_s = 0;
  std::uint64_t generation = 0;  // clears so far
  std::string folder;
  remote_stats remote;  // the shared level below (the disk actor's, when --remote-cache is given)

  // The wire's (tiers.disk): jobs, writes_out and generation are the actor's own.
  static constexpr auto fields() {
    using s = disk_stats;
    using t = tier_series;
    return std::make_tuple(
        probe::sum("entries", &s::entries, t::entries), probe::sum("chunks", &s::chunks),
        probe::sum("checkpoints", &s::checkpoints), probe::sum("bytes", &s::bytes, t::bytes),
        probe::keep("limit_bytes", &s::limit_bytes, t::limit_bytes),
        probe::keep("lifetime_s", &s::lifetime_s), probe::keep("min_free_bytes", &s::min_free_bytes),
        probe::keep("fs_free_bytes", &s::fs_free_bytes), probe::keep("longest_prefix", &s::longest_prefix),
        probe::sum("hits", &s::hits, t::hits),
        probe::sum("restore_failures", &s::restore_failures, t::restore_failures),
        probe::sum("write_failures", &s::write_failures, t::write_failures),
        probe::sum("refusals", &s::refusals), probe::sum("evictions", &s::evictions, t::evictions),
        probe::sum("superseded", &s::superseded), probe::sum("files_written", &s::files_written),
        probe::sum("bytes_written", &s::bytes_written, t::bytes_written),
        probe::sum("bytes_read", &s::bytes_read, t::bytes_read), probe::keep("folder", &s::folder),
        probe::sum("misses", &s::misses, t::misses), probe::sum("declined", &s::declined),
        probe::sum("tokens_saved", &s::tokens_saved, t::tokens_saved),
        probe::sum("anchors_planned", &s::anchors_planned),
        probe::keep("read_bytes_per_s", &s::read_bytes_per_s),
        probe::sum("restore_failure_reasons", &s::restore_failure_reasons),
        probe::keep("anchored_bytes", &s::anchored_bytes), probe::keep("dedup_ratio", &s::dedup_ratio),
        probe::sum("sweep", &s::sweep), probe::keep("remote", &s::remote));
  }
};

// One anchor of the disk tier as the operator's view lists it (GET /v1/cache/disk/entries):
// hashes and numbers, never a token or prompt text.
struct disk_entry_view {
  std::uint64_t key = 0;    // the prefix hash at its line (the name of the chunk it ends on)
  std::size_t tokens = 0;   // the prefix it restores
  std::uint64_t bytes = 0;  // what a restore reads: its chunks and the anchor
  std::uint64_t hits = 0;   // restores of it
  double value = 0;         // the eviction rule's value now: the lowest goes first
  std::int64_t age_s = 0;   // seconds since its last write or restore
};

// The anchors, most valuable first, at most the number asked for; `total` counts them all.
struct disk_entry_list {
  std::size_t total = 0;
  std::vector<disk_entry_view> entries;
};

// GET /v1/cache/disk/entries' body: keys as 16 hex digits, as the files are named.
inline void to_json(nlohmann::json& j, const disk_entry_view& e) {
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(e.key));
  j = {{"key", key},     {"tokens", e.tokens}, {"bytes", e.bytes},
       {"hits", e.hits}, {"value", e.value},   {"age_s", e.age_s}};
}
inline void to_json(nlohmann::json& j, const disk_entry_list& l) {
  j = {{"total", l.total}, {"entries", l.entries}};
}

// What the board's staging (runtime/disk/disk_staging) holds and has done.
struct disk_staging_stats {
  std::uint64_t staged_bytes = 0;  // held now, not yet released
  std::uint64_t stage_limit_bytes = 0;
  long stage_refusals = 0;  // anchors or rows the pool could not take
  long submissions = 0;     // prefix writes handed out
  long checkpoints_staged = 0;
  double prefill_tokens_per_s = 0;  // measured from the prefill chunks (0 until measured)

  // Summed over the slots; the prefill rate is the first slot's.
  static constexpr auto fields() {
    using s = disk_staging_stats;
    return std::make_tuple(
        probe::sum("jobs", &s::submissions), probe::sum("stage_refusals", &s::stage_refusals),
        probe::sum("staged_bytes", &s::staged_bytes), probe::sum("stage_limit_bytes", &s::stage_limit_bytes),
        probe::keep("prefill_tokens_per_s", &s::prefill_tokens_per_s),
        probe::sum("checkpoints_staged", &s::checkpoints_staged));
  }
};

// The wire's tiers.disk: the disk actor's stats, the board's staging and the admission settings.
struct disk_tier_stats {
  disk_stats store;
  disk_staging_stats staging;
  std::size_t min_tokens = 0;
  std::size_t checkpoint_tokens = 0;

  static constexpr auto fields() {
    using s = disk_tier_stats;
    return std::make_tuple(probe::inlined(&s::store), probe::inlined(&s::staging),
                           probe::keep("min_tokens", &s::min_tokens),
                           probe::keep("checkpoint_tokens", &s::checkpoint_tokens));
  }
};

}  // namespace anchorage
