#pragma once
// Why a request resumed less deep than its prompt shared with what the server held, and what
// that cost (docs/CACHES.md, "Miss reasons"). The tiers' coordinator classifies each request it
// plans (runtime/tiers/held_record.hpp); the slots' counts add up in the stats' "miss_reasons"
// and in /metrics' anchorage_cache_miss_{requests,tokens}_total{reason="..."}.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "protocol/probe.hpp"

namespace anchorage {

// In the order the coordinator tries them; the first that applies is the request's.
enum class miss_reason : std::uint8_t {
  no_shared_prefix,     // nothing held shares a resumable line with the prompt
  verification_failed,  // the read of the offer taken failed its checks
  stale_offer,          // the offer taken was gone when its read came (cleared, evicted, moved)
  cost_rule,            // a tier declined a deeper start: reading costs more than the prefill saves
  other_fingerprint,    // only another engine's disk folder holds a deeper line (other weights, grid)
  evicted,              // a state the server held at a deeper line was dropped to make room
  budget_refused,       // ... was never kept: a budget refused it when it was made
  client_rewrote,       // the session's own conversation changed below its end anchor
  between_anchors,      // the prompt parts from what was held between two of its anchors
};

constexpr std::array<miss_reason, 9> all_miss_reasons = {
    miss_reason::no_shared_prefix, miss_reason::verification_failed, miss_reason::stale_offer,
    miss_reason::cost_rule,        miss_reason::other_fingerprint,   miss_reason::evicted,
    miss_reason::budget_refused,   miss_reason::client_rewrote,      miss_reason::between_anchors};

// One reason's count: the requests and the prompt tokens they prefilled that the server had
// held (the deepest shared depth less the depth resumed at).
struct miss_count {
  long requests = 0;
  long long tokens = 0;

  static constexpr auto fields() {
    return std::make_tuple(probe::sum("requests", &miss_count::requests),
                           probe::sum("tokens", &miss_count::tokens));
  }
};

struct miss_stats {
  miss_count no_shared_prefix, verification_failed, stale_offer, cost_rule, other_fingerprint, evicted,
      budget_refused, client_rewrote, between_anchors;

  // The wire's names are the reasons' (to_string below).
  static constexpr auto fields() {
    return std::make_tuple(probe::sum("no_shared_prefix", &miss_stats::no_shared_prefix),
                           probe::sum("verification_failed", &miss_stats::verification_failed),
                           probe::sum("stale_offer", &miss_stats::stale_offer),
                           probe::sum("cost_rule", &miss_stats::cost_rule),
                           probe::sum("other_fingerprint", &miss_stats::other_fingerprint),
                           probe::sum("evicted", &miss_stats::evicted),
                           probe::sum("budget_refused", &miss_stats::budget_refused),
                           probe::sum("client_rewrote", &miss_stats::client_rewrote),
                           probe::sum("between_anchors", &miss_stats::between_anchors));
  }

  miss_count& operator[](miss_reason r) { return const_cast<miss_count&>(std::as_const(*this)[r]); }
  const miss_count& operator[](miss_reason r) const {
    switch (r) {
      case miss_reason::no_shared_prefix:
        return no_shared_prefix;
      case miss_reason::verification_failed:
        return verification_failed;
      case miss_reason::stale_offer:
        return stale_offer;
      case miss_reason::cost_rule:
        return cost_rule;
      case miss_reason::other_fingerprint:
        return other_fingerprint;
      case miss_reason::evicted:
        return evicted;
      case miss_reason::budget_refused:
        return budget_refused;
      case miss_reason::client_rewrote:
        return client_rewrote;
      case miss_reason::between_anchors:
        return between_anchors;
    }
    return between_anchors;
  }
};

constexpr const char* to_string(miss_reason r) {
  switch (r) {
    case miss_reason::no_shared_prefix:
      return "no_shared_prefix";
    case miss_reason::verification_failed:
      return "verification_failed";
    case miss_reason::stale_offer:
      return "stale_offer";
    case miss_reason::cost_rule:
      return "cost_rule";
    case miss_reason::other_fingerprint:
      return "other_fingerprint";
    case miss_reason::evicted:
      return "evicted";
    case miss_reason::budget_refused:
      return "budget_refused";
    case miss_reason::client_rewrote:
      return "client_rewrote";
    case miss_reason::between_anchors:
      return "between_anchors";
  }
  return "between_anchors";
}

// The reason `s` names (to_string's spelling); nothing for any other text.
inline std::optional<miss_reason> miss_reason_from_string(std::string_view s) {
  for (miss_reason r : all_miss_reasons)
    if (s == to_string(r)) return r;
  return std::nullopt;
}

}  // namespace anchorage
