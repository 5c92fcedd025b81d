#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "protocol/ledger_entry.hpp"
#include "protocol/openai_types.hpp"

namespace anchorage {

// A rendered request as the conductor hands it to the board.
struct board_job {
  std::string id;
  std::string route;        // "completions" or "chat"
  std::string session_key;
  std::vector<std::int32_t> prompt;
  // generation
  double temperature = 1.0;
  double top_p = 1.0;
  std::uint64_t seed = 0;
  long max_tokens = 16;     // already clamped to the context left
  std::vector<std::int32_t> stop_tokens;
  std::vector<std::string> stop_strings;
  bool parse_reasoning = false;
  bool parse_tool_calls = false;
  // what the lookup decided (cold until the tiers land)
  x_cache_info cache;
  std::int64_t received_ns = 0;  // steady clock, when the edge received the request
  caf::actor sink;               // receives the stream_events
};

// What the board and conductor tell the edge about one request, in order:
// accepted, progress*, delta*, then finished | failed (or failed alone when refused).
struct stream_event {
  enum class kind { accepted, progress, delta, finished, failed };
  kind what = kind::delta;
  std::string id;
  std::vector<output_delta> deltas;  // delta
  long done_tokens = 0;              // progress: prompt tokens forwarded so far
  long prompt_tokens = 0;
  std::string finish_reason;         // finished
  assistant_output output;           // finished: everything the deltas carried
  usage_info usage;                  // finished
  x_cache_info cache;                // finished
  ledger_entry ledger;               // finished
  api_error error;                   // failed
};

}  // namespace anchorage
