// Load on a running server's edge, printed as one JSON object (docs/BENCHMARKS.md, "The edge
// under load"):
//   1. for each count in --clients, that many streaming completions sent at once, one connection
//      each, while /health is probed every 5 ms: how many got 200 (a whole stream), 429 (with a
//      JSON body), another status, a reset (or a close without an answer) or no answer in time,
//      and the slowest /health;
//   2. --slow connections that send half a request's head, then a byte every --slow-interval-ms:
//      /health's latency and a normal completion's time while they are open, against the same
//      completion before them, and how many the server still holds after --hold-s.
// Point it at any server (this branch's or another build's) with --port; it only uses HTTP.
// Usage: anchorage-load --port 8080 [--clients 48,256] [--slow 500] [--slow-interval-ms 2000]
//                       [--max-tokens 8] [--hold-s 5] [--timeout-s 30]
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "tools/load_client.hpp"

using namespace anchorage;
using json = nlohmann::json;

namespace {

struct args {
  int port = 8080;
  std::vector<int> clients = {48, 256};
  int slow = 500;
  int slow_interval_ms = 2000;
  int max_tokens = 8;
  int hold_s = 5;
  int timeout_s = 30;
};

args parse(int argc, char** argv) {
  args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string v = argv[++i];
    if (flag == "--port")
      a.port = std::stoi(v);
    else if (flag == "--clients") {
      a.clients.clear();
      std::stringstream ss(v);
      for (std::string item; std::getline(ss, item, ',');) a.clients.push_back(std::stoi(item));
    } else if (flag == "--slow")
      a.slow = std::stoi(v);
    else if (flag == "--slow-interval-ms")
      a.slow_interval_ms = std::stoi(v);
    else if (flag == "--max-tokens")
      a.max_tokens = std::stoi(v);
    else if (flag == "--hold-s")
      a.hold_s = std::stoi(v);
    else if (flag == "--timeout-s")
      a.timeout_s = std::stoi(v);
    else
      throw std::invalid_argument("unknown flag " + flag);
  }
  return a;
}

std::string completion(int max_tokens, bool stream) {
  return load::post("/v1/completions", json{{"prompt", "Hello there, how are you"},
                                            {"max_tokens", max_tokens},
                                            {"temperature", 0},
                                            {"stream", stream}}
                                           .dump());
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

// /health probes while `work` runs: every latency (a failed or late probe counts as the timeout).
std::vector<double> probe_health(int port, int timeout_ms, const std::function<void()>& work) {
  std::atomic<bool> done{false};
  std::vector<double> lat;
  std::thread probe([&] {
    while (!done) {
      const load::outcome o = load::exchange(port, load::get("/health"), timeout_ms);
      lat.push_back(o.status == 200 ? o.total_ms : static_cast<double>(timeout_ms));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  work();
  done = true;
  probe.join();
  return lat;
}

json streams(const args& a, int n) {
  std::vector<load::outcome> all;
  const load::steady::time_point t0 = load::steady::now();
  const std::vector<double> health = probe_health(a.port, a.timeout_s * 1000, [&] {
    all = load::concurrent(a.port, n, completion(a.max_tokens, true), a.timeout_s * 1000);
  });
  int ok = 0, busy = 0, busy_json = 0, other = 0, resets = 0, hangs = 0;
  json statuses = json::object();
  for (const load::outcome& o : all) {
    if (o.what == load::outcome::kind::reset || o.what == load::outcome::kind::no_connect)
      ++resets;
    else if (o.what == load::outcome::kind::timed_out)
      ++hangs;
    else if (o.status == 200 && o.stream_done)
      ++ok;
    else if (o.status == 429) {
      ++busy;
      busy_json += o.json_body ? 1 : 0;
    } else {
      ++other;
      statuses[std::to_string(o.status)] = statuses.value(std::to_string(o.status), 0) + 1;
    }
  }
  return {{"clients", n},
          {"ok_200", ok},
          {"busy_429", busy},
          {"busy_429_json", busy_json},
          {"other", other},
          {"other_statuses", statuses},
          {"resets", resets},
          {"hangs", hangs},
          {"wall_ms", load::ms_since(t0)},
          {"health_probes", health.size()},
          {"health_p50_ms", percentile(health, 0.5)},
          {"health_max_ms", percentile(health, 1.0)}};
}

json slow_phase(const args& a) {
  const int timeout_ms = a.timeout_s * 1000;
  const load::outcome before = load::exchange(a.port, completion(a.max_tokens, false), timeout_ms);
  load::slow_pool slow(a.port, a.slow, std::chrono::milliseconds(a.slow_interval_ms));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<double> health;
  for (int i = 0; i < 5; ++i) {
    const load::outcome o = load::exchange(a.port, load::get("/health"), timeout_ms);
    health.push_back(o.status == 200 ? o.total_ms : static_cast<double>(timeout_ms));
  }
  const load::outcome during = load::exchange(a.port, completion(a.max_tokens, false), timeout_ms);
  std::this_thread::sleep_for(std::chrono::seconds(a.hold_s));
  return {{"connections", a.slow},
          {"opened", slow.opened()},
          {"health_p50_ms", percentile(health, 0.5)},
          {"health_max_ms", percentile(health, 1.0)},
          {"completion_before_ms", before.total_ms},
          {"completion_before_status", before.status},
          {"completion_during_ms", during.total_ms},
          {"completion_during_status", during.status},
          {"held_after_hold_s", slow.alive()}};
}

}  // namespace

int main(int argc, char** argv) {
  args a;
  try {
    a = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "anchorage-load: " << e.what() << "\n";
    return 2;
  }
  json out{{"port", a.port}, {"max_tokens", a.max_tokens}, {"timeout_s", a.timeout_s}};
  out["streams"] = json::array();
  for (int n : a.clients) out["streams"].push_back(streams(a, n));
  if (a.slow > 0) out["slow"] = slow_phase(a);
  std::cout << out.dump(2) << "\n";
  return 0;
}
