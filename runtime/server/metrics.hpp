#pragma once
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "protocol/cache_stats.hpp"
#include "protocol/ledger_entry.hpp"
#include "runtime/server/histogram.hpp"

namespace anchorage {

// Server counters in Prometheus' text format (version 0.0.4); the latencies as histograms
// (runtime/server/histogram.hpp). One owner (the conductor).
class metrics {
 public:
  void on_finished(const ledger_entry& e);
  void on_rejected(int status);
  // The tiers' latest stats (cache_tiers::stats()): one series per tier and counter.
  void set_tiers(cache_stats tiers) { tiers_ = std::move(tiers); }
  // As the stats route shows them: one object per tier ({} before the board reported).
  nlohmann::json tiers() const { return tiers_ ? nlohmann::json(*tiers_) : nlohmann::json::object(); }
  // running: requests on the board's slots now.
  std::string text(long queue_depth, long running) const;

 private:
  std::map<std::tuple<request_kind, cache_source, run_finish>, long> requests_;
  std::map<int, long> rejected_;
  long prompt_tokens_ = 0, prefilled_ = 0, cached_ = 0, output_tokens_ = 0;
  // Latencies in seconds, every finished request; time to first token also by cache source.
  histogram ttft_{histogram::latency_bounds()}, total_{histogram::latency_bounds()},
      queue_{histogram::latency_bounds()};
  std::map<cache_source, histogram> ttft_by_source_;
  std::optional<cache_stats> tiers_;
};

}  // namespace anchorage
