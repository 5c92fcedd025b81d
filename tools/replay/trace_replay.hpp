#pragma once
// Replaying a trace recorded with `anchorage --trace FILE` (runtime/server/trace.hpp) against a fresh
// in-process server, comparing what comes back with what was recorded.
//
// The server is started from the trace's header (preset, prefix-chunk, ctx-size, weights-seed,
// served-model-name; port 0, no trace, everything else at its default) plus `extra_flags`,
// which are server flags in parse_server_args' spelling applied after the header's (so they win:
// {"--device", "cuda"}, {"--weights", "w.safetensors"}). The header does not record the device,
// a weights file, the BLAS core or the decode block; give them here when the recording used
// something else than the defaults.
//
// Each request line is sent in order, one at a time, over HTTP on the loopback to its recorded
// route with its recorded body: the JSON re-dumped, or the text itself when the body was
// recorded as a string (it was not JSON). A string that is itself valid JSON can only have come
// from a body that was a JSON string literal, and is sent as that literal; any other string is
// ambiguous in the format (raw text `abc` and the literal `"abc"` are both recorded as "abc")
// and is sent as raw text. Without a seed the conductor samples with the request's sequence
// number, so the order is part of the determinism.
//
// The outcome is rebuilt from the response as trace_outcome / trace_error build it:
//  - non-streaming: from the JSON body (an error body: status = the HTTP status, type, message);
//  - streaming: from the SSE chunks: content, reasoning_content and text deltas concatenated,
//    tool-call deltas accumulated by index as an OpenAI client does (name and arguments
//    appended), finish_reason from the chunk carrying it, usage from the usage chunk. A stream
//    that fails after its headers went out carries only {"error":{...}}: its HTTP status is 200
//    and the recorded status is not visible, so "status" is not compared for such an error.
//  - chat finish_reason: the client sees chat_finish_reason(...), "tool_calls" when there were
//    tool calls and the generation stopped; the trace records the generation's own reason, so
//    "tool_calls" with tool calls is read back as "stop".
//  - /v1/messages and /v1/responses: read in their own wire's shapes (tools/replay/wire_outcome.hpp);
//    a call's recorded arguments compare with the messages wire's tool_use input as that route
//    dumps them. Their requests are sent without a seed (the wires have none).
//  - usage of a stream that did not ask for stream_options.include_usage (no usage chunk): taken
//    from the request's ledger entry, which the board fills from the same session counters
//    (prompt_tokens, output_tokens, prompt_tokens - prefilled). Without a ledger entry it is not
//    compared (the missing ledger entry is a mismatch of its own).
// The ledger entry is read from GET /v1/cache/stats after each request: the entry in "ledger"
// whose id is the response's id (the body's "id", or any chunk's). Only the trace_ledger fields
// are compared. Times (t_ms, restore_ms, ttft_ms, total_ms) and ids are never compared.
//
// Each difference is one line: `request I (line L, ROUTE): FIELD: expected E, got A`, where I
// counts request lines from 0, L is the file's line number (the header is line 1), FIELD is a
// path such as `outcome.text`, `outcome.tool_calls[0].arguments` or `ledger.prefilled`, and E
// and A are JSON (long strings are shown around their first difference).
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/openai_types.hpp"

namespace anchorage {

struct replay_report {
  std::string trace;                    // the file replayed
  std::size_t requests = 0;             // request lines replayed
  std::vector<std::string> mismatches;  // one line per difference, in request order
  double seconds = 0;                   // wall time of the replay, server start and stop included
  bool ok() const { return mismatches.empty(); }
};

// Throws std::runtime_error when the file cannot be read, its header is not a trace header, or
// the server cannot start (bad flags included). A request line that is not JSON, or lacks
// route/body/outcome, is a mismatch line and the replay goes on with the next one.
replay_report replay_trace(const std::string& path, const std::vector<std::string>& extra_flags = {});

// {"trace","requests","ok","mismatches","seconds"}: the anchorage-replay summary.
nlohmann::json to_json(const replay_report& r);

// The pieces, exposed for tests. `route` is the trace's short name ("completions" or "chat").
// From a non-streaming response: its HTTP status and body text.
nlohmann::json replay_outcome_from_body(request_kind kind, int status, const std::string& body);
// From a streaming response's body text (the SSE events). `ledger` is the request's ledger entry
// (null when none was found), used for usage when the stream carries no usage chunk. An error
// event yields {"type","message"} without "status" (see above).
nlohmann::json replay_outcome_from_sse(request_kind kind, const std::string& sse,
                                       const nlohmann::json& ledger);

}  // namespace anchorage
