// The stats and metrics routes' shape, held against golden files (issue 23: every field and
// series they have today stays while the stats move to typed probes). A fixed request sequence
// on a server with every tier on (the device tiers, the disk tier, the session spill, the suffix
// store, the response cache): a turn, its follow-up, the same greedy turn again, a refused
// request. Then every key path of GET /v1/cache/stats (arrays' elements merged, values left out)
// and every series of GET /metrics (name and labels, values left out) must be the golden ones.
// ANCHORAGE_GOLDEN_UPDATE=1 rewrites the files from this server instead (review the diff).
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/chat_turns.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// Every key path under `j`: objects as "a.b", an array's elements merged under "a[]".
void key_paths(const json& j, const std::string& at, std::set<std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string p = at.empty() ? it.key() : at + "." + it.key();
      out.insert(p);
      key_paths(it.value(), p, out);
    }
  } else if (j.is_array()) {
    for (const json& e : j) key_paths(e, at + "[]", out);
  }
}

// Every series of a Prometheus text: its name and labels, without the value.
std::set<std::string> series_of(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    out.insert(line.substr(0, line.rfind(' ')));
  }
  return out;
}

std::string golden_path(const std::string& name) {
  return std::string(ANCHORAGE_SOURCE_DIR) + "/tests/golden/" + name;
}

void check_golden(const std::string& name, const std::set<std::string>& got) {
  const std::string path = golden_path(name);
  const char* update = std::getenv("ANCHORAGE_GOLDEN_UPDATE");
  if (update && std::string(update) == "1") {
    std::ofstream f(path, std::ios::trunc);
    for (const auto& k : got) f << k << "\n";
    WARN("rewrote " << path);
    return;
  }
  std::ifstream f(path);
  REQUIRE(f.good());
  std::set<std::string> want;
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) want.insert(line);
  for (const auto& k : want) {
    INFO(name << ": missing " << k);
    CHECK(got.count(k) == 1);
  }
  for (const auto& k : got) {
    INFO(name << ": new (add it to the golden file when it is meant) " << k);
    CHECK(want.count(k) == 1);
  }
}

}  // namespace

TEST_CASE("http: /v1/cache/stats and /metrics keep every field and series of the golden files",
          "[http][stats][golden]") {
  temp_dir dir("anchorage-http-golden");
  http_server s({"--cache-dir", dir.str(), "--suffix-store", "on", "--session-spill", "on",
                 "--response-cache-mb", "16"});
  json messages = json::array({{{"role", "system"}, {"content", filler(system_prompt, 300)}},
                               {{"role", "user"}, {"content", "List the files."}}});
  const turn_reply first = post_turn(s, greedy_turn(messages, 8));
  messages.push_back({{"role", "assistant"}, {"content", first.message["content"]}});
  messages.push_back({{"role", "user"}, {"content", "And the tests?"}});
  post_turn(s, greedy_turn(messages, 8));
  json again = json::array({messages[0], messages[1]});
  const turn_reply replayed = post_turn(s, greedy_turn(again, 8));
  CHECK(replayed.x_cache["source"] == "response");
  CHECK(s.post("/v1/chat/completions", "{not json").status == 400);

  const http_reply stats = s.get("/v1/cache/stats");
  REQUIRE(stats.status == 200);
  std::set<std::string> keys;
  key_paths(stats.body_json(), "", keys);
  check_golden("stats_keys.txt", keys);

  const http_reply metrics = s.get("/metrics");
  REQUIRE(metrics.status == 200);
  check_golden("metrics_series.txt", series_of(metrics.body));
}
