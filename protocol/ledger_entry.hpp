#pragma once
#include <optional>
#include <string>

#include "protocol/cache_source.hpp"
#include "protocol/miss_stats.hpp"

namespace anchorage {

// One request as the ledger records it: what the caches did and what it cost.
struct ledger_entry {
  std::string id;
  std::string session_key;
  request_kind route = request_kind::completion;  // "completions" or "chat" on the wire
  long prompt_tokens = 0;
  cache_source source = cache_source::cold;  // which tier answered
  long resumed_at = 0;                       // the position the prefill started from
  long prefilled = 0;                        // tokens forwarded by the prefill
  double queue_ms = 0;                       // from its arrival to a slot taking it (the wait in the queue)
  int slot = -1;                             // the slot (--parallel) that served it
  double restore_ms = 0;
  double ttft_ms = 0;
  double total_ms = 0;
  long output_tokens = 0;
  unsigned long long seed = 0;                  // the sampling seed used (the request's, or the fallback)
  run_finish finish_reason = run_finish::stop;  // stop, length, cancelled or error
  std::optional<miss_reason> miss;              // x_cache_info's: why it resumed less deep
  long miss_tokens = 0;
};

}  // namespace anchorage
