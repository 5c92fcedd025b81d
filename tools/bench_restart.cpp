// Time to first token after a restart, served from the disk tier, against a cold prefill of the
// same prompt, in one process, printed as one JSON object:
//   1. a server with --cache-dir answers a chat request (a long system message, a short user
//      message) cold; the disk tier writes its chunk and anchor files behind (the admission's
//      "first request" rule in docs/DISK_TIER.md: a session's first request gets anchors at the
//      last 4 grid lines at or below where its last user message starts). Once /v1/cache/stats shows them
//      written (tiers.disk.entries > 0, tiers.disk.staged_bytes == 0) the server is drained and destroyed;
//   2. a new server on the same --cache-dir (its scan rebuilds the index) answers the same system
//      message with another user message: resumed from the disk at the last anchor line;
//   3. a server without --cache-dir answers that second request cold: the baseline.
// TTFT, source, resumed_at, prefilled_tokens and restore_ms are the responses' own x_cache
// figures. Exits 1, printing what the stats say, when the restarted request was not served from
// the disk. The run works in a fresh folder under --dir, removed at the end.
// Usage: anchorage-bench-restart [--head-chars 16000] [--dir /tmp/anchorage-bench-restart]
//                                [--preset small] [--max-tokens 8]
#include <httplib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/core/log.hpp"
#include "actors/server.hpp"
#include "runtime/engine/blas_setup.hpp"
#include "runtime/text/template/chat_template.hpp"
#include "runtime/server/server_config.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace anchorage;
using json = nlohmann::json;

namespace {

[[noreturn]] void die(const std::string& what) {
  log_error() << what;
  std::exit(1);
}

// `n` characters of plain prose (lowercase words, sentences, a newline now and then), the same
// for the same n. The tokenizer is byte-level: one token per character.
std::string head_text(std::size_t n) {
  static const char* words[] = {"the",    "anchor", "state",  "cache",   "line",   "grid",   "prompt",
                                "system", "tokens", "layer",  "delta",   "rule",   "disk",   "chunk",
                                "file",   "read",   "write",  "exact",   "resume", "model",  "agent",
                                "tool",   "result", "answer", "session", "prefix", "server", "client"};
  std::string s;
  std::uint64_t x = 0x243F6A8885A308D3ULL;
  int in_sentence = 0, sentences = 0;
  while (s.size() < n) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::string w = words[x % (sizeof words / sizeof *words)];
    if (in_sentence == 0) w[0] = static_cast<char>(w[0] - 'a' + 'A');
    s += w;
    if (++in_sentence >= 8 + static_cast<int>((x >> 20) % 8)) {
      s += ++sentences % 6 == 0 ? ".\n" : ". ";
      in_sentence = 0;
    } else {
      s += ' ';
    }
  }
  s.resize(n);
  return s;
}

json chat_request(const std::string& head, const std::string& user, int max_tokens) {
  return {{"model", "anchorage"},
          {"messages",
           json::array({{{"role", "system"}, {"content", head}}, {{"role", "user"}, {"content", user}}})},
          {"max_tokens", max_tokens},
          {"temperature", 0}};
}

// One whole server on a loopback port the kernel picks.
class live_server {
 public:
  explicit live_server(const std::vector<std::string>& flags) {
    server_config cfg = parse_server_args(flags);
    cfg.admin_token.clear();
    srv_ = std::make_unique<server>(cfg);
    port_ = srv_->start();
    if (port_ <= 0) die("the server did not bind a port");
    for (int i = 0; i < 50; ++i) {
      auto c = client(5);
      if (auto r = c->Get("/health"); r && r->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    die("the server did not answer GET /health");
  }
  // Drains (nothing runs by then), stops, and destroys the server: its actors, the disk writer
  // included, are gone when this returns.
  void shut_down() {
    if (!srv_) return;
    srv_->drain(std::chrono::seconds(30));
    srv_->stop();
    srv_.reset();
  }
  ~live_server() { shut_down(); }

  std::unique_ptr<httplib::Client> client(int read_timeout_s = 600) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(read_timeout_s, 0);
    c->set_write_timeout(30, 0);
    c->set_keep_alive(false);
    return c;
  }
  json post(const std::string& path, const json& body) const {
    auto r = client()->Post(path.c_str(), body.dump(), "application/json");
    if (!r) die("POST " + path + ": " + httplib::to_string(r.error()));
    if (r->status != 200)
      die("POST " + path + ": " + std::to_string(r->status) + " " + r->body.substr(0, 400));
    return json::parse(r->body);
  }
  json stats() const {
    auto r = client(10)->Get("/v1/cache/stats");
    if (!r || r->status != 200) die("GET /v1/cache/stats failed");
    return json::parse(r->body);
  }

 private:
  std::unique_ptr<server> srv_;
  int port_ = 0;
};

json disk_stats_of(const json& stats) {
  if (!stats.contains("tiers") || !stats["tiers"].contains("disk")) return json();
  return stats["tiers"]["disk"];
}

// The disk tier's stats once the board has reported them (it does after its start-up scan).
json disk_stats_when_up(const live_server& s) {
  for (int i = 0; i < 200; ++i) {
    const json d = disk_stats_of(s.stats());
    if (d.is_object() && d.contains("entries")) return d;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  die("the disk tier's stats never showed up in /v1/cache/stats");
}

// Polls the stats until the disk tier's writes are indexed (anchors indexed, nothing staged).
json wait_written(const live_server& s, std::chrono::seconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  for (;;) {
    const json d = disk_stats_of(s.stats());
    if (d.is_object() && d.value("entries", 0) > 0 && d.value("staged_bytes", 1) == 0) return d;
    if (std::chrono::steady_clock::now() >= until) {
      log_error() << "the disk tier wrote no anchor within " << within.count()
                  << " s; its stats: " << d.dump();
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// The prompt's length and where its last user message starts, rendered and tokenized as the
// server does (the default template options: thinking on, no tools).
std::pair<std::size_t, std::size_t> prompt_shape(const std::string& head, const std::string& user) {
  const std::vector<chat_message> m = {{"system", head, std::nullopt, {}, {}, {}, {}},
                                       {"user", user, std::nullopt, {}, {}, {}, {}}};
  const tokenizer tok;
  const auto ids = tok.encode(render_chat(m, template_options{}), true);
  const auto mark = tok.encode("<|im_start|>user", true);
  const auto at = std::find_end(ids.begin(), ids.end(), mark.begin(), mark.end());
  return {ids.size(), static_cast<std::size_t>(at - ids.begin())};
}

// A response's figures: x_cache, prompt tokens, the text.
json figures(const json& r) {
  json x = r.at("x_cache");
  x["prompt_tokens"] = r.at("usage").at("prompt_tokens");
  x["completion_tokens"] = r.at("usage").at("completion_tokens");
  x["cached_tokens"] = r.at("usage").at("prompt_tokens_details").at("cached_tokens");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  select_blas_core(argv);
  std::size_t head_chars = 16000;
  std::string dir = "/tmp/anchorage-bench-restart";
  std::string preset = "small";
  int max_tokens = 8;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) die("missing value for " + a);
    if (a == "--head-chars")
      head_chars = std::stoul(argv[++i]);
    else if (a == "--dir")
      dir = argv[++i];
    else if (a == "--preset")
      preset = argv[++i];
    else if (a == "--max-tokens")
      max_tokens = std::stoi(argv[++i]);
    else
      die("unknown flag " + a + " (flags: --head-chars --dir --preset --max-tokens)");
  }
  // A folder of our own, so no earlier run's files are found at the first start.
  const std::string run_dir = dir + "/run-" + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::remove_all(run_dir, ec);
  std::filesystem::create_directories(run_dir, ec);
  if (ec) die("cannot create " + run_dir + ": " + ec.message());

  const std::vector<std::string> base = {"--preset", preset, "--host", "127.0.0.1", "--port", "0"};
  std::vector<std::string> with_disk = base;
  // The disk tier's restart: the session spill (on with --cache-dir) would otherwise serve it.
  with_disk.insert(with_disk.end(), {"--cache-dir", run_dir, "--session-spill", "off"});

  const std::string head = head_text(head_chars);
  const std::string first_user = "First question: which words come up most often above?";
  const std::string second_user = "Another question: summarise the text above in one line.";
  const json first_req = chat_request(head, first_user, max_tokens);
  const json second_req = chat_request(head, second_user, max_tokens);

  json out;
  out["preset"] = preset;
  out["head_chars"] = head_chars;
  out["cache_dir"] = run_dir;

  // 1. Cold, with the disk tier writing behind.
  json first, written;
  {
    live_server s(with_disk);
    log_info() << "first request (cold, writes behind)";
    first = figures(s.post("/v1/chat/completions", first_req));
    written = wait_written(s, std::chrono::seconds(300));
    s.shut_down();
  }
  // 2. A new server on the same folder: the scan rebuilds the index.
  json restarted, after_scan, after_restart;
  {
    live_server s(with_disk);
    after_scan = disk_stats_when_up(s);
    log_info() << "after the restart (" << after_scan.value("entries", 0) << " anchors indexed)";
    restarted = figures(s.post("/v1/chat/completions", second_req));
    after_restart = disk_stats_of(s.stats());
    s.shut_down();
  }
  // 3. The baseline: the second request cold, on a server without a disk tier.
  json cold;
  {
    live_server s(base);
    log_info() << "the same request cold";
    cold = figures(s.post("/v1/chat/completions", second_req));
    s.shut_down();
  }
  std::filesystem::remove_all(run_dir, ec);

  const double cold_ttft = cold.value("ttft_ms", 0.0), restart_ttft = restarted.value("ttft_ms", 0.0);
  // The system head: the tokens before the user message, the same in both requests.
  out["head_tokens"] = prompt_shape(head, second_user).second;
  out["anchor_line"] = written.value("longest_prefix", 0);  // the longest anchor written
  out["first_request"] = first;
  out["restarted"] = restarted;
  out["cold"] = cold;
  out["cold_ttft_ms"] = cold_ttft;
  out["restart_ttft_ms"] = restart_ttft;
  out["cold_over_restart"] = restart_ttft > 0 ? cold_ttft / restart_ttft : 0.0;
  out["restore_ms"] = restarted.value("restore_ms", 0.0);
  out["disk"] = {
      {"after_first_request", written}, {"after_scan", after_scan}, {"after_restart", after_restart}};
  std::cout << out.dump(2) << std::endl;
  if (restarted.value("source", "") != "disk") {
    log_error() << "the restarted request was served from '" << restarted.value("source", "")
                << "', not from the disk";
    return 1;
  }
  return 0;
}
