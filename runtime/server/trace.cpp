#include "runtime/server/trace.hpp"

#include <stdexcept>

namespace anchorage {

trace_writer::trace_writer(const std::string& path, const nlohmann::json& header)
    : out_(path, std::ios::trunc), start_(std::chrono::steady_clock::now()) {
  if (!out_) throw std::runtime_error("cannot open the trace file '" + path + "'");
  out_ << header.dump() << '\n';
  out_.flush();
}

void trace_writer::record(const std::string& route, const std::string& body, const nlohmann::json& outcome,
                          const nlohmann::json& ledger) {
  nlohmann::json line;
  line["t_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  line["route"] = route;
  auto parsed = nlohmann::json::parse(body, nullptr, false);
  line["body"] = parsed.is_discarded() ? nlohmann::json(body) : parsed;
  line["outcome"] = outcome;
  if (!ledger.is_null()) line["ledger"] = ledger;
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mu_);
  out_ << text << '\n';
  out_.flush();
}

nlohmann::json trace_outcome(request_kind kind, run_finish finish_reason, const assistant_output& out,
                             const usage_info& usage) {
  nlohmann::json j;
  j["status"] = 200;
  j["finish_reason"] = finish_reason;
  if (kind == request_kind::completion) {
    j["text"] = out.content;
  } else {
    j["content"] = out.content;
    j["reasoning"] = out.reasoning;
    nlohmann::json calls = nlohmann::json::array();
    for (const auto& c : out.tool_calls) calls.push_back({{"name", c.name}, {"arguments", c.arguments}});
    j["tool_calls"] = std::move(calls);
  }
  j["usage"] = {{"prompt_tokens", usage.prompt_tokens},
                {"completion_tokens", usage.completion_tokens},
                {"cached_tokens", usage.cached_tokens}};
  return j;
}

nlohmann::json trace_error(const api_error& e) {
  return {{"status", e.status}, {"type", e.type}, {"message", e.message}};
}

nlohmann::json trace_ledger(const ledger_entry& e) {
  return {{"session_key", e.session_key},
          {"route", e.route},
          {"prompt_tokens", e.prompt_tokens},
          {"source", e.source},
          {"resumed_at", e.resumed_at},
          {"prefilled", e.prefilled},
          {"output_tokens", e.output_tokens},
          {"finish_reason", e.finish_reason},
          {"seed", e.seed}};
}

}  // namespace anchorage
