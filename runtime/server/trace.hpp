#pragma once
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/ledger_entry.hpp"
#include "protocol/openai_types.hpp"

namespace anchorage {

// A trace is JSON lines. The first line describes the system that recorded it:
//   {"trace": 1, "preset": ..., "prefix-chunk": ..., "ctx-size": ..., "weights-seed": ...,
//    "served-model-name": ...}
// and each further line is one client request as the edge received it, with what came of it:
//   {"t_ms": 12.5, "route": "/v1/chat/completions", "body": <the request JSON, or its text when
//    not JSON>, "outcome": <trace_outcome(...)>, "ledger": <the ledger entry, when it ran>}
// Times (t_ms, ledger times) are recorded but not compared on replay.
class trace_writer {
 public:
  // Throws std::runtime_error when the file cannot be opened.
  trace_writer(const std::string& path, const nlohmann::json& header);
  // Thread-safe: HTTP workers record concurrently; lines are whole.
  void record(const std::string& route, const std::string& body, const nlohmann::json& outcome,
              const nlohmann::json& ledger);

 private:
  std::mutex mu_;
  std::ofstream out_;
  std::chrono::steady_clock::time_point start_;
};

// The deterministic part of a response, the same whether it was streamed or not.
nlohmann::json trace_outcome(request_kind kind, run_finish finish_reason, const assistant_output& out,
                             const usage_info& usage);
nlohmann::json trace_error(const api_error& e);
// The ledger fields a replay compares (no times, no id).
nlohmann::json trace_ledger(const ledger_entry& e);

}  // namespace anchorage
