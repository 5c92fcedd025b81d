// Engine throughput: prefill tokens/s at several prompt lengths and decode tokens/s at a
// context length, printed as one JSON object. Usage:
//   anchorage-bench-engine [--preset small] [--prefill 1024,8192,32768] [--decode-at 32768]
//                          [--decode-tokens 32] [--followup 0] [--device cpu|cuda]
//                          [--model FILE.gguf|DIR [--weight-storage stored|f32]] [--threads N]
// --model: a checkpoint instead of the preset's random weights (its matrices kept as stored
// unless --weight-storage f32); the resident memory after loading and at the end is reported.
// --followup N: after the decode, a follow-up turn of N new tokens on the same sequence, timed
// to its first token.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/ops.hpp"
#include "runtime/engine/compute_threads.hpp"
#include "runtime/core/log.hpp"
#include "runtime/engine/blas_setup.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/engine/engine_options.hpp"
#include "runtime/engine/engine_weights.hpp"
#include "runtime/model/model_weights.hpp"
#include "tools/bench_common.hpp"

using namespace anchorage;
using namespace anchorage::bench;

namespace {

// The process's resident set (VmRSS), in bytes.
std::size_t resident_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  select_blas_core(argv);
  std::string preset = "small", device = "cpu";
  std::vector<int> lengths = {1024, 8192, 32768};
  int decode_at = 32768, decode_tokens = 32, followup = 0;
  engine_options model;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--preset")
      preset = v;
    else if (a == "--prefill")
      lengths = parse_list(v);
    else if (a == "--decode-at")
      decode_at = std::stoi(v);
    else if (a == "--decode-tokens")
      decode_tokens = std::stoi(v);
    else if (a == "--followup")
      followup = std::stoi(v);
    else if (a == "--device")
      device = v;
    else if (a == "--model" || a == "--weight-storage" || a == "--threads" || a == "--activations")
      model.parse(a, v);
    else {
      log_error() << "unknown argument " << a;
      return 2;
    }
  }
  try {
    int longest = decode_at + decode_tokens + followup + 1;
    for (int n : lengths) longest = std::max(longest, n);
    const auto where = device == "cuda" ? kernels::backend::cuda : kernels::backend::cpu;
    const std::size_t rss_start = resident_bytes();
    if (model.threads) set_compute_threads(*model.threads);
    set_product_activations(product_activations_named(model.activations).value_or(product_activations::f32));
    loaded_model m;
    if (model.model_path) {
      model.ctx_size = longest;
      m = model.load();
    } else {
      m.config = preset_config(preset);
      m.config.ctx_size = std::max(m.config.ctx_size, longest);
      m.weights = random_weights(m.config, 1);
    }
    const model_config c = m.config;
    engine e(std::make_shared<const engine_weights>(c, m.weights, m.stored, where, m.stored_types));
    m.weights.clear();  // the engine has its own copy of the float ones

    nlohmann::json out;
    out["preset"] = model.model_path ? *model.model_path : preset;
    if (model.model_path) out["weight_storage"] = model.weight_storage;
    out["weights_stored_bytes"] = e.weights()->stored_bytes();
    out["weights_f32_bytes"] = e.weights()->bytes();
    out["resident_bytes_loaded"] = resident_bytes() - rss_start;
    out["device"] = device;
    out["threads"] = compute_threads();
    out["activations"] = to_string(current_product_activations());
    out["grid"] = c.grid;
    out["arithmetic"] = kernels::arithmetic_flags(where);
    std::size_t params = 0;
    for (const auto& s : weight_specs(c)) {
      std::size_t n = 1;
      for (auto d : s.shape) n *= static_cast<std::size_t>(d);
      params += n;
    }
    out["parameters"] = params;
    for (int n : lengths) {
      e.reset();
      const auto prompt = prose(static_cast<std::size_t>(n));
      const auto t0 = std::chrono::steady_clock::now();
      e.prefill(prompt);
      const double s = seconds_since(t0);
      out["prefill"].push_back({{"tokens", n}, {"seconds", s}, {"tokens_per_s", n / s}});
      log_info() << "prefill " << n << ": " << s << " s";
    }
    if (decode_tokens > 0) {
      if (e.length() != static_cast<std::size_t>(decode_at)) {
        e.reset();
        e.prefill(prose(static_cast<std::size_t>(decode_at)));
      }
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < decode_tokens; ++i) e.decode(static_cast<token_id>(97 + i % 26));
      const double s = seconds_since(t0);
      out["decode"] = {{"context", decode_at},
                       {"tokens", decode_tokens},
                       {"seconds", s},
                       {"tokens_per_s", decode_tokens / s}};
    }
    if (followup > 0) {
      // A follow-up turn on the same sequence: its new tokens prefilled where the answer ended
      // (off the grid, as a session resume is), then its first token.
      const std::size_t before = e.length();
      const auto more = prose(static_cast<std::size_t>(followup) + before);
      const std::vector<token_id> tail(more.end() - followup, more.end());
      const auto t0 = std::chrono::steady_clock::now();
      e.prefill(tail);
      const auto& l = e.last_logits();
      e.decode(static_cast<token_id>(std::max_element(l.begin(), l.end()) - l.begin()));
      const double s = seconds_since(t0);
      out["followup"] = {{"context", before}, {"new_tokens", followup}, {"ttft_s", s}};
    }
    out["resident_bytes_end"] = resident_bytes() - rss_start;
    std::cout << out.dump(2) << "\n";
  } catch (const std::exception& ex) {
    log_error() << ex.what();
    return 1;
  }
}
