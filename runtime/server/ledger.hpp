#pragma once
#include <deque>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/ledger_entry.hpp"

namespace anchorage {

nlohmann::json to_json(const ledger_entry& e);
// Throws nlohmann's errors, and std::invalid_argument for a route or source the server never writes.
ledger_entry ledger_entry_from_json(const nlohmann::json& j);

// The request ledger: one JSON line per request appended to a file (when a path is given), the
// last `keep` entries and per-source totals for the stats route. Not thread-safe: one owner.
class ledger {
 public:
  explicit ledger(const std::string& path = {}, std::size_t keep = 256);

  void record(const ledger_entry& e);
  const std::deque<ledger_entry>& recent() const { return recent_; }
  // {"requests": N, "by_source": {SOURCE: {"requests", "prompt_tokens", "prefilled", "output_tokens"}}}
  // with one SOURCE per x_cache source seen ("cold", "resident", "disk", ...).
  nlohmann::json totals() const;

 private:
  struct sums {
    long requests = 0, prompt_tokens = 0, prefilled = 0, output_tokens = 0;
  };
  std::ofstream file_;
  std::size_t keep_;
  std::deque<ledger_entry> recent_;
  std::map<std::string, sums> by_source_;
  long requests_ = 0;
};

}  // namespace anchorage
