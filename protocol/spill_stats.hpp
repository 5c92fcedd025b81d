#pragma once
// The session spill's stats (docs/SESSION_SPILL.md) as GET /v1/cache/stats shows them in
// tiers.spill: the store's (runtime/spill/spill_store) and the keeper's (runtime/tiers/
// spill_keeper) in one object, from their field lists (protocol/probe.hpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/probe.hpp"

namespace anchorage {

// One conversation the spill holds, as the operator's view lists it: its id (16 hex digits, as
// its manifest file is named), the session key it was spilled under (the client's, as the slots
// show it), its tokens, the bytes of the files it names and its manifest, its end anchor (0:
// none), whether it was a slot's at a planned stop, and when it was spilled. Never a token or
// prompt text.
struct spill_conversation_view {
  std::string id;
  std::string session;
  std::size_t tokens = 0;
  std::uint64_t bytes = 0;
  std::size_t end_anchor = 0;
  bool resident = false;
  double spilled_unix_s = 0;

  static constexpr auto fields() {
    using s = spill_conversation_view;
    return std::make_tuple(probe::keep("id", &s::id), probe::keep("session", &s::session),
                           probe::keep("tokens", &s::tokens), probe::keep("bytes", &s::bytes),
                           probe::keep("end_anchor", &s::end_anchor), probe::keep("resident", &s::resident),
                           probe::keep("spilled_unix_s", &s::spilled_unix_s));
  }
};

// The store's files and I/O.
struct spill_store_stats {
  std::size_t manifests = 0, blocks = 0, anchors = 0;
  std::uint64_t bytes = 0, bytes_in_flight = 0, limit_bytes = 0;
  std::size_t writes_in_flight = 0;
  std::uint64_t reads = 0;  // verified reads (read-backs at the start too)
  std::uint64_t restore_failures = 0, writes = 0, writes_unchanged = 0, write_failures = 0, refusals = 0,
                evictions = 0, blocks_written = 0, blocks_skipped = 0, anchors_written = 0,
                anchors_skipped = 0, bytes_written = 0, bytes_read = 0, scan_damaged = 0, scan_foreign = 0;
  // The conversations held, the most recently used first, at most conversations_listed.
  static constexpr std::size_t conversations_listed = 20;
  std::vector<spill_conversation_view> conversations;

  static constexpr auto fields() {
    using s = spill_store_stats;
    using t = tier_series;
    return std::make_tuple(
        probe::sum("manifests", &s::manifests), probe::sum("blocks", &s::blocks),
        probe::sum("anchors", &s::anchors), probe::sum("bytes", &s::bytes, t::bytes),
        probe::sum("bytes_in_flight", &s::bytes_in_flight),
        probe::keep("limit_bytes", &s::limit_bytes, t::limit_bytes),
        probe::sum("writes_in_flight", &s::writes_in_flight), probe::sum("reads", &s::reads),
        probe::sum("restore_failures", &s::restore_failures, t::restore_failures),
        probe::sum("writes", &s::writes), probe::sum("writes_unchanged", &s::writes_unchanged),
        probe::sum("write_failures", &s::write_failures, t::write_failures),
        probe::sum("refusals", &s::refusals), probe::sum("evictions", &s::evictions, t::evictions),
        probe::sum("blocks_written", &s::blocks_written), probe::sum("blocks_skipped", &s::blocks_skipped),
        probe::sum("anchors_written", &s::anchors_written),
        probe::sum("anchors_skipped", &s::anchors_skipped),
        probe::sum("bytes_written", &s::bytes_written, t::bytes_written),
        probe::sum("bytes_read", &s::bytes_read, t::bytes_read), probe::sum("scan_damaged", &s::scan_damaged),
        probe::sum("scan_foreign", &s::scan_foreign), probe::keep("conversations", &s::conversations));
  }
};

// One timed transfer: its bytes and seconds.
struct spill_transfer {
  std::uint64_t bytes = 0;
  double seconds = 0;

  static constexpr auto fields() {
    using s = spill_transfer;
    return std::make_tuple(probe::keep("bytes", &s::bytes), probe::keep("seconds", &s::seconds));
  }
};

// The tier's: the store's, then what the keeper staged, answered and measured.
struct spill_tier_stats {
  spill_store_stats store;
  long hits = 0;  // requests the spill tier answered
  std::size_t entries = 0;
  std::size_t tokens_saved = 0;
  long spills = 0, spill_refusals = 0, stage_refusals = 0, read_failures = 0;
  long blocks_staged = 0, blocks_skipped_on_device = 0;
  std::uint64_t staged_bytes = 0;
  std::size_t in_flight = 0;
  long in_flight_waits = 0;
  std::uint64_t stage_limit_bytes = 0;
  std::size_t min_tokens = 0;
  double read_bytes_per_s = 0, write_bytes_per_s = 0;
  spill_transfer last_write, last_read;

  static constexpr auto fields() {
    using s = spill_tier_stats;
    using t = tier_series;
    return std::make_tuple(
        probe::inlined(&s::store), probe::sum("hits", &s::hits, t::hits),
        probe::sum("entries", &s::entries, t::entries),
        probe::sum("tokens_saved", &s::tokens_saved, t::tokens_saved), probe::sum("spills", &s::spills),
        probe::sum("spill_refusals", &s::spill_refusals), probe::sum("stage_refusals", &s::stage_refusals),
        probe::sum("read_failures", &s::read_failures), probe::sum("blocks_staged", &s::blocks_staged),
        probe::sum("blocks_skipped_on_device", &s::blocks_skipped_on_device),
        probe::sum("staged_bytes", &s::staged_bytes), probe::sum("in_flight", &s::in_flight),
        probe::sum("in_flight_waits", &s::in_flight_waits),
        probe::keep("stage_limit_bytes", &s::stage_limit_bytes), probe::keep("min_tokens", &s::min_tokens),
        probe::keep("read_bytes_per_s", &s::read_bytes_per_s),
        probe::keep("write_bytes_per_s", &s::write_bytes_per_s), probe::keep("last_write", &s::last_write),
        probe::keep("last_read", &s::last_read));
  }
};

}  // namespace anchorage
