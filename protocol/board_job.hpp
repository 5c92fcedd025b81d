#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "protocol/cache_source.hpp"
#include "protocol/disk_types.hpp"
#include "protocol/ledger_entry.hpp"
#include "protocol/openai_types.hpp"
#include "protocol/output_rules.hpp"
#include "protocol/prompt_image.hpp"

namespace anchorage {

class tokenizer;  // runtime/text/tokenizer/tokenizer.hpp; only carried here

// What the board and conductor tell the edge about one request, in order:
// accepted, progress*, delta*, then finished | failed (or failed alone when refused).
struct stream_event {
  enum class kind { accepted, progress, delta, finished, failed };
  kind what = kind::delta;
  std::string id;
  std::vector<output_delta> deltas;  // delta
  long done_tokens = 0;  // progress: prompt tokens in the state so far (the restored ones included)
  long prompt_tokens = 0;
  long cached_tokens = 0;  // progress: the tokens restored instead of forwarded (the resume point)
  double elapsed_ms = 0;   // progress: since the request's run began on its slot
  run_finish finish_reason = run_finish::stop;  // finished
  std::string stop_sequence;  // finished: the stop string that ended the content ("": none did)
  assistant_output output;    // finished: everything the deltas carried
  usage_info usage;           // finished
  x_cache_info cache;         // finished
  ledger_entry ledger;        // finished
  api_error error;            // failed
};

// Whoever receives a request's stream_events (the edge's per-request actor).
using sink_actor = caf::typed_actor<caf::reacts_to<stream_event>>;

// A compaction request the board may serve as the continuation of the conversation it holds
// for the session (docs/COMPACTION.md): the continuation's own tokens (the glue that closes the
// held answer, one user turn with the client's system text and instructions, the generation
// prompt with thinking off) and the guard's lines (the client's history's user lines, in order).
struct compaction_plan {
  std::string shape;                    // how the request was recognised
  std::vector<std::int32_t> turn;       // appended to the held rows
  std::vector<std::string> user_lines;  // the guard looks for every one, in order
  bool starts_in_reasoning = false;     // the continuation's generation prompt opens <think>
  // The turn to append instead when the held conversation lacks only the client's last user
  // message (asked for right after the user typed): that message's user turn, then `turn`'s;
  // empty when the client's history does not end with an unanswered user message.
  std::vector<std::int32_t> turn_after_pending;
};

// What the sampler is asked for.
struct sampling_request {
  double temperature = 1.0;
  double top_p = 1.0;
  std::uint64_t seed = 0;
  bool seed_explicit = false;  // the client sent the seed (else the server chose it)
  long max_tokens = 16;        // already clamped to the context left
  std::vector<std::int32_t> stop_tokens;
  std::vector<std::pair<std::int32_t, float>> logit_bias;  // OpenAI logit_bias, ids in the vocabulary
};

// A client's request: it has a sink and a ledger entry. The board serves it as a generation, a
// replay (the response cache, a prewritten summary) or, for a compaction request whose guard
// holds, a continuation.
struct client_request {
  long user_start = -1;  // where the last user message starts in the prompt; -1 unknown
  // The response cache's (docs/CACHES.md): whether the client asked for a determined output (an
  // explicit temperature 0, or top_k 1; temperature is then 0), and the fields that change the
  // output without reaching the board otherwise: tool_choice as parsed (auto | none | required |
  // function:NAME) and response_format as sent (compact JSON; empty when absent).
  bool greedy = false;
  std::string tool_choice;
  std::string response_format;
  // A compaction request's continuation (none: not one, or compaction off); the job's prompt is
  // the request as sent, served when the guard fails.
  std::optional<compaction_plan> compaction;
  // The request came from opencode (its User-Agent, or an `ses_` session id): the sessions the
  // compaction worker prewrites for.
  bool opencode = false;
};

// The compaction worker's idle work (docs/COMPACTION.md): it prewrites the summary of the
// conversation a slot holds; the job's prompt is the held conversation's end rows and the plan's
// turn, filled in by the board. It has no sink and no ledger entry; any request stops it.
struct idle_prewrite {
  compaction_plan plan;
};

// A rendered request as the conductor hands it to the board: a core (who, which route, the
// prompt, the session, the sink), what the sampler and the output parser are asked for, and the
// kind of work it is.
struct board_job {
  std::string id;
  request_kind route = request_kind::completion;
  std::string session_key;
  std::vector<std::int32_t> prompt;
  // The prompt's images, in order (empty for text): their rows in `prompt` carry key ids, not
  // vocabulary ids (runtime/image/image_rows.hpp).
  std::vector<prompt_image> images;
  // The tokenizer the prompt was rendered with, which the board decodes and samples with; null:
  // the byte tokenizer.
  std::shared_ptr<const tokenizer> tok;
  sampling_request sampling;
  output_rules rules;
  std::variant<client_request, idle_prewrite> kind;
  // what the lookup decided (the board fills it in when it takes the request)
  x_cache_info cache;
  std::int64_t received_ns = 0;  // steady clock, when the edge received the request
  sink_actor sink;               // receives the stream_events

  // The client's request; null for idle work.
  client_request* client() { return std::get_if<client_request>(&kind); }
  const client_request* client() const { return std::get_if<client_request>(&kind); }
  bool idle() const { return std::holds_alternative<idle_prewrite>(kind); }
  // The compaction plan the job carries: a compaction request's, or the idle work's; null: none.
  const compaction_plan* compaction() const {
    if (const auto* c = client()) return c->compaction ? &*c->compaction : nullptr;
    return &std::get<idle_prewrite>(kind).plan;
  }
  compaction_plan* compaction() {
    return const_cast<compaction_plan*>(static_cast<const board_job*>(this)->compaction());
  }
};

}  // namespace anchorage
