#include "runtime/server/ledger.hpp"

#include <stdexcept>

namespace anchorage {

nlohmann::json to_json(const ledger_entry& e) {
  nlohmann::json j = {{"id", e.id},
                      {"session_key", e.session_key},
                      {"route", e.route},
                      {"prompt_tokens", e.prompt_tokens},
                      {"source", e.source},
                      {"resumed_at", e.resumed_at},
                      {"prefilled", e.prefilled},
                      {"queue_ms", e.queue_ms},
                      {"slot", e.slot},
                      {"restore_ms", e.restore_ms},
                      {"ttft_ms", e.ttft_ms},
                      {"total_ms", e.total_ms},
                      {"output_tokens", e.output_tokens},
                      {"seed", e.seed},
                      {"finish_reason", e.finish_reason}};
  if (e.miss) {
    j["miss_reason"] = to_string(*e.miss);
    j["miss_tokens"] = e.miss_tokens;
  }
  return j;
}

namespace {

template <class E>
E from_text(std::optional<E> e, const char* field) {
  if (!e)
    throw std::invalid_argument(std::string("a ledger entry's ") + field + " is none the server writes");
  return *e;
}

}  // namespace

ledger_entry ledger_entry_from_json(const nlohmann::json& j) {
  ledger_entry e;
  e.id = j.at("id").get<std::string>();
  e.session_key = j.at("session_key").get<std::string>();
  e.route = from_text(request_kind_from_string(j.at("route").get<std::string>()), "route");
  e.prompt_tokens = j.at("prompt_tokens").get<long>();
  e.source = from_text(cache_source_from_string(j.at("source").get<std::string>()), "source");
  e.resumed_at = j.at("resumed_at").get<long>();
  e.prefilled = j.at("prefilled").get<long>();
  e.queue_ms = j.value("queue_ms", 0.0);
  e.slot = j.value("slot", -1);
  e.restore_ms = j.at("restore_ms").get<double>();
  e.ttft_ms = j.at("ttft_ms").get<double>();
  e.total_ms = j.at("total_ms").get<double>();
  e.output_tokens = j.at("output_tokens").get<long>();
  e.seed = j.value("seed", 0ULL);
  e.finish_reason =
      from_text(run_finish_from_string(j.at("finish_reason").get<std::string>()), "finish_reason");
  if (j.contains("miss_reason")) {
    e.miss = from_text(miss_reason_from_string(j.at("miss_reason").get<std::string>()), "miss_reason");
    e.miss_tokens = j.value("miss_tokens", 0L);
  }
  return e;
}

ledger::ledger(const std::string& path, std::size_t keep) : keep_(keep) {
  if (!path.empty()) {
    file_.open(path, std::ios::app);
    if (!file_) throw std::runtime_error("cannot open the ledger file '" + path + "' for appending");
  }
}

void ledger::record(const ledger_entry& e) {
  ++requests_;
  auto& s = by_source_[to_string(e.source)];
  ++s.requests;
  s.prompt_tokens += e.prompt_tokens;
  s.prefilled += e.prefilled;
  s.output_tokens += e.output_tokens;
  recent_.push_back(e);
  while (recent_.size() > keep_) recent_.pop_front();
  if (file_.is_open()) {
    file_ << to_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    file_.flush();
  }
}

nlohmann::json ledger::totals() const {
  nlohmann::json j = {{"requests", requests_}, {"by_source", nlohmann::json::object()}};
  for (const auto& [source, s] : by_source_)
    j["by_source"][source] = {{"requests", s.requests},
                              {"prompt_tokens", s.prompt_tokens},
                              {"prefilled", s.prefilled},
                              {"output_tokens", s.output_tokens}};
  return j;
}

}  // namespace anchorage
