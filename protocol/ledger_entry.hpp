#pragma once
#include <string>

namespace anchorage {

// One request as the ledger records it: what the caches did and what it cost.
struct ledger_entry {
  std::string id;
  std::string session_key;
  std::string route;           // "completions" or "chat"
  long prompt_tokens = 0;
  std::string source = "cold"; // which tier answered: cold, resident, end, store, disk, spill, response
  long resumed_at = 0;         // the position the prefill started from
  long prefilled = 0;          // tokens forwarded by the prefill
  double restore_ms = 0;
  double ttft_ms = 0;
  double total_ms = 0;
  long output_tokens = 0;
  unsigned long long seed = 0; // the sampling seed used (the request's, or the fallback)
  std::string finish_reason;   // stop, length, tool_calls, cancelled, error
};

}  // namespace anchorage
