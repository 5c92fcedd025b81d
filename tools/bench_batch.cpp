// Batched decode across slots: decode tokens/s of N slots stepped together by decode_batch
// against the same N slots decoded one after another, for several N, in one run; and the
// memory of N slots with a weight set each against N slots sharing one. Prints one JSON object.
// Usage:
//   anchorage-bench-batch [--preset qwen35-small] [--slots 1,2,4,8] [--prompt 512]
//                         [--decode-tokens 32] [--ctx-size 4096] [--memory-slots 4]
// Each slot is prefilled with its own prompt (lengths prompt, prompt + 64, ...); the sequential
// run and the batched run then start from the same state (the sections put back, the length
// reset) and feed the same tokens, so both do the same work; max_logit_diff compares their last
// logits. lm_head: the LM head's product alone, BLAS against kernels/gemm_rows, per row count.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/ops.hpp"
#include "runtime/core/log.hpp"
#include "runtime/engine/blas_setup.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/engine/engine_batch.hpp"
#include "runtime/model/model_weights.hpp"
#include "tools/bench_common.hpp"
#include "tools/bench_state.hpp"

using namespace anchorage;
using namespace anchorage::bench;

namespace {

// Resident set size from /proc/self/statm.
std::size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * 4096;
}

std::size_t state_bytes(const state_layout& l) {
  std::size_t n = 0;
  for (const auto& s : l.sections) n += s.bytes;
  for (const auto& v : l.views) n += v.bytes_per_token * v.capacity;
  return n;
}

nlohmann::json memory_figure(const model_config& c, const tensor_map& w, int n) {
  nlohmann::json out;
  out["slots"] = n;
  {
    const std::size_t r0 = rss_bytes();
    std::vector<std::unique_ptr<engine>> own;
    for (int i = 0; i < n; ++i) own.push_back(std::make_unique<engine>(c, w));
    out["own_weights_rss_bytes"] = rss_bytes() - r0;
  }
  {
    const std::size_t r0 = rss_bytes();
    auto shared = std::make_shared<const engine_weights>(c, w);
    std::vector<std::unique_ptr<engine>> slots;
    for (int i = 0; i < n; ++i) slots.push_back(std::make_unique<engine>(shared));
    out["shared_weights_rss_bytes"] = rss_bytes() - r0;
    out["weights_bytes"] = shared->bytes();
    out["state_bytes_per_slot"] = state_bytes(slots.front()->layout());
  }
  return out;
}

// The LM head alone (vocab x d_model, the largest weight), m rows: BLAS (GEMV for one row, GEMM
// otherwise, as the engine's gemm) against gemm_rows, milliseconds per product. It separates
// what the kernel gains over BLAS from what reading the weights once gains.
nlohmann::json head_figure(const engine_weights& w, const std::vector<int>& rows, int reps) {
  const model_config& c = w.config();
  const int d = c.d_model, n = c.vocab;
  nlohmann::json out = nlohmann::json::array();
  for (int m : rows) {
    const auto a = prose(static_cast<std::size_t>(m) * static_cast<std::size_t>(d), 9);
    std::vector<float> x(a.begin(), a.end()), y(static_cast<std::size_t>(m) * static_cast<std::size_t>(n));
    for (auto& v : x) v = v / 128.0f - 0.5f;
    auto time = [&](bool rows_kernel) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) {
        if (rows_kernel)
          kernels::cpu::gemm_rows(m, n, d, x.data(), d, w.get("lm_head"), d, 0.0f, y.data(), n);
        else
          kernels::cpu::gemm(true, m, n, d, 1.0f, x.data(), d, w.get("lm_head"), d, 0.0f, y.data(), n);
      }
      return 1e3 * seconds_since(t0) / reps;
    };
    out.push_back({{"rows", m}, {"blas_ms", time(false)}, {"gemm_rows_ms", time(true)}});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  select_blas_core(argv);
  std::string preset = "qwen35-small";
  std::vector<int> slot_counts = {1, 2, 4, 8};
  int prompt = 512, decode_tokens = 32, ctx = 4096, memory_slots = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--preset")
      preset = v;
    else if (a == "--slots")
      slot_counts = parse_list(v);
    else if (a == "--prompt")
      prompt = std::stoi(v);
    else if (a == "--decode-tokens")
      decode_tokens = std::stoi(v);
    else if (a == "--ctx-size")
      ctx = std::stoi(v);
    else if (a == "--memory-slots")
      memory_slots = std::stoi(v);
    else {
      log_error() << "unknown argument " << a;
      return 2;
    }
  }
  try {
    model_config c = preset_config(preset);
    c.ctx_size = ctx;
    const tensor_map w = random_weights(c, 1);
    nlohmann::json out;
    out["preset"] = preset;
    out["device"] = "cpu";
    out["arithmetic"] = kernels::arithmetic_flags(kernels::backend::cpu);
    out["prompt"] = prompt;
    out["decode_tokens"] = decode_tokens;
    out["ctx_size"] = ctx;
    if (memory_slots > 0) out["memory"] = memory_figure(c, w, memory_slots);

    const auto shared = std::make_shared<const engine_weights>(c, w);
    out["lm_head"] = head_figure(*shared, slot_counts, 10);
    for (int n : slot_counts) {
      std::vector<std::unique_ptr<engine>> owned;
      std::vector<engine*> slots;
      std::vector<saved_state> start;
      for (int i = 0; i < n; ++i) {
        owned.push_back(std::make_unique<engine>(shared));
        owned.back()->prefill(
            prose(static_cast<std::size_t>(prompt + 64 * i), static_cast<std::uint64_t>(i + 1)));
        slots.push_back(owned.back().get());
      }
      // One step of each kind first (page faults, BLAS buffers), then the common start.
      decode_batch(slots, std::vector<token_id>(static_cast<std::size_t>(n), 32));
      for (engine* e : slots) e->decode(33);
      for (engine* e : slots) start.push_back(save(*e));
      auto token = [](int step, int slot) { return static_cast<token_id>(97 + (step * 7 + slot) % 26); };

      auto t0 = std::chrono::steady_clock::now();
      for (int s = 0; s < decode_tokens; ++s)
        for (int i = 0; i < n; ++i) slots[static_cast<std::size_t>(i)]->decode(token(s, i));
      const double seq_s = seconds_since(t0);
      std::vector<std::vector<float>> seq_logits;
      for (engine* e : slots) seq_logits.push_back(e->last_logits());

      for (int i = 0; i < n; ++i)
        put_back(*slots[static_cast<std::size_t>(i)], start[static_cast<std::size_t>(i)]);
      t0 = std::chrono::steady_clock::now();
      for (int s = 0; s < decode_tokens; ++s) {
        std::vector<token_id> step;
        for (int i = 0; i < n; ++i) step.push_back(token(s, i));
        decode_batch(slots, step);
      }
      const double batch_s = seconds_since(t0);
      float diff = 0.0f;
      for (int i = 0; i < n; ++i) {
        const auto& a = seq_logits[static_cast<std::size_t>(i)];
        const auto& b = slots[static_cast<std::size_t>(i)]->last_logits();
        for (std::size_t j = 0; j < a.size(); ++j) diff = std::max(diff, std::fabs(a[j] - b[j]));
      }
      const double tokens = static_cast<double>(n) * decode_tokens;
      out["runs"].push_back({{"slots", n},
                             {"sequential_tokens_per_s", tokens / seq_s},
                             {"batched_tokens_per_s", tokens / batch_s},
                             {"speedup", seq_s / batch_s},
                             {"max_logit_diff", diff}});
      log_info() << n << " slots: sequential " << tokens / seq_s << " tok/s, batched " << tokens / batch_s
                 << " tok/s";
    }
    std::cout << out.dump(2) << "\n";
  } catch (const std::exception& ex) {
    log_error() << ex.what();
    return 1;
  }
}
