// Engine throughput: prefill tokens/s at several prompt lengths and decode tokens/s at a
// context length, printed as one JSON object. Usage:
//   anchorage-bench-engine [--preset small] [--prefill 1024,8192,32768] [--decode-at 32768]
//                          [--decode-tokens 32] [--followup 0] [--device cpu|cuda]
// --followup N: after the decode, a follow-up turn of N new tokens on the same sequence, timed
// to its first token.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/ops.hpp"
#include "runtime/core/log.hpp"
#include "runtime/engine/blas_setup.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/engine/model_weights.hpp"
#include "tools/bench_common.hpp"

using namespace anchorage;
using namespace anchorage::bench;

int main(int argc, char** argv) {
  select_blas_core(argv);
  std::string preset = "small", device = "cpu";
  std::vector<int> lengths = {1024, 8192, 32768};
  int decode_at = 32768, decode_tokens = 32, followup = 0;
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
    else {
      log_error() << "unknown argument " << a;
      return 2;
    }
  }
  try {
    model_config c = preset_config(preset);
    int longest = decode_at + decode_tokens;
    for (int n : lengths) longest = std::max(longest, n);
    c.ctx_size = std::max(c.ctx_size, longest);
    const auto where = device == "cuda" ? kernels::backend::cuda : kernels::backend::cpu;
    engine e(c, random_weights(c, 1), where);

    nlohmann::json out;
    out["preset"] = preset;
    out["device"] = device;
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
    std::cout << out.dump(2) << "\n";
  } catch (const std::exception& ex) {
    log_error() << ex.what();
    return 1;
  }
}
