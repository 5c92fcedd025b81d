// Speculative decoding (docs/SPECULATIVE.md): what a verify round costs and what the drafters
// earn. Prints one JSON object.
// Usage:
//   anchorage-bench-speculative [--preset small-mtp] [--prompt 1024] [--decode-tokens 128]
//                               [--rounds 1,2,4,8,16] [--reps 3] [--draft-max 8]
// bound: from one state (a prompt of --prompt tokens), k + 1 single decode steps against one
//   verify round of the same k + 1 rows, the drafts being the target's own greedy continuation
//   (every draft accepted: the most a round can earn), for each k; milliseconds, the median of
//   --reps.
// decode: --decode-tokens greedy tokens with speculation off, mtp (when the preset has a draft
//   layer) and lookup, on two workloads: "repeat" (a prompt that repeats one "file" four times,
//   so what follows a match is in the prompt) and "noise" (random bytes); tokens/s, the
//   drafters' rounds, drafts and accepted drafts, and whether the output equals the off run's;
//   tokens/s is the median of --reps runs.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/log.hpp"
#include "runtime/engine/blas_setup.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/generation/generation_session.hpp"
#include "tools/bench_common.hpp"
#include "tools/bench_state.hpp"

using namespace anchorage;
using namespace anchorage::bench;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

nlohmann::json bound(engine& e, const std::vector<token_id>& prompt, const std::vector<int>& ks, int reps) {
  e.reset();
  e.prefill(prompt);
  const saved_state start = save(e);
  // The target's own greedy continuation: the pending token, then what follows it.
  const int most = *std::max_element(ks.begin(), ks.end());
  std::vector<token_id> greedy;
  token_id t = static_cast<token_id>(std::max_element(e.last_logits().begin(), e.last_logits().end()) -
                                     e.last_logits().begin());
  for (int i = 0; i <= most; ++i) {
    greedy.push_back(t);
    e.decode(t);
    t = static_cast<token_id>(std::max_element(e.last_logits().begin(), e.last_logits().end()) -
                              e.last_logits().begin());
  }
  nlohmann::json out = nlohmann::json::array();
  for (int k : ks) {
    const std::vector<token_id> rows(greedy.begin(), greedy.begin() + k + 1);
    std::vector<double> steps, round;
    for (int r = 0; r < reps; ++r) {
      put_back(e, start);
      auto t0 = std::chrono::steady_clock::now();
      for (token_id x : rows) e.decode(x);
      steps.push_back(1e3 * seconds_since(t0));
      put_back(e, start);
      t0 = std::chrono::steady_clock::now();
      e.forward(rows);
      e.keep_rows(rows.size());
      round.push_back(1e3 * seconds_since(t0));
    }
    const double s = median(steps), v = median(round);
    out.push_back({{"k", k}, {"rows", k + 1}, {"steps_ms", s}, {"round_ms", v}, {"speedup", s / v}});
  }
  return out;
}

nlohmann::json counters_json(const drafter_counters& d) {
  return {
      {"rounds", d.rounds},
      {"drafted", d.drafted},
      {"accepted", d.accepted},
      {"mean_accepted", d.rounds ? static_cast<double>(d.accepted) / static_cast<double>(d.rounds) : 0.0}};
}

struct decode_run {
  double tokens_per_s = 0;
  std::vector<token_id> ids;
  speculative_counters c;
};

decode_run decode(engine& e, const std::vector<token_id>& prompt, int tokens, speculative_options o) {
  e.reset();
  e.prefill(prompt);
  generation_job job;
  job.prompt = prompt;
  job.gen.max_tokens = tokens;
  job.speculative = o;
  generation_session s(e, job);
  s.step(1);  // the first token, from the prefill's logits
  const auto t0 = std::chrono::steady_clock::now();
  const long before = s.output_tokens();
  while (!s.done()) s.step(4);
  decode_run r;
  r.tokens_per_s = static_cast<double>(s.output_tokens() - before) / seconds_since(t0);
  r.ids = s.output_ids();
  r.c = s.speculation();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  select_blas_core(argv);
  std::string preset = "small-mtp";
  int prompt_len = 1024, decode_tokens = 128, reps = 3, draft_max = 8;
  std::vector<int> ks = {1, 2, 4, 8, 16};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--preset")
      preset = v;
    else if (a == "--prompt")
      prompt_len = std::stoi(v);
    else if (a == "--decode-tokens")
      decode_tokens = std::stoi(v);
    else if (a == "--rounds")
      ks = parse_list(v);
    else if (a == "--reps")
      reps = std::stoi(v);
    else if (a == "--draft-max")
      draft_max = std::stoi(v);
    else {
      std::cerr << "unknown option " << a << "\n";
      return 2;
    }
  }
  model_config c = preset_config(preset);
  c.ctx_size = std::max(c.ctx_size, prompt_len + decode_tokens + 64);
  const tensor_map w = random_weights(c, 7);
  engine e(c, w);
  nlohmann::json out;
  out["preset"] = preset;
  out["prompt"] = prompt_len;
  out["bound"] = bound(e, prose(static_cast<std::size_t>(prompt_len), 1), ks, reps);

  const std::vector<token_id> file = prose(static_cast<std::size_t>(prompt_len / 4), 2);
  std::vector<token_id> repeat;
  for (int i = 0; i < 4; ++i) repeat.insert(repeat.end(), file.begin(), file.end());
  const std::vector<std::pair<std::string, std::vector<token_id>>> workloads = {
      {"repeat", repeat}, {"noise", prose(static_cast<std::size_t>(prompt_len), 3)}};
  std::vector<speculative_mode> modes = {speculative_mode::off, speculative_mode::lookup};
  if (c.mtp) modes.push_back(speculative_mode::mtp);
  for (const auto& [name, prompt] : workloads) {
    nlohmann::json wl;
    std::vector<token_id> reference;
    for (speculative_mode m : modes) {
      speculative_options o;
      o.mode = m;
      o.draft_max = draft_max;
      // The median of --reps runs (each the same tokens: the run is deterministic).
      std::vector<double> rates;
      decode_run r;
      for (int rep = 0; rep < reps; ++rep) {
        r = decode(e, prompt, decode_tokens, o);
        rates.push_back(r.tokens_per_s);
      }
      r.tokens_per_s = median(rates);
      if (m == speculative_mode::off) reference = r.ids;
      wl[to_string(m)] = {{"tokens_per_s", r.tokens_per_s}, {"same_output", r.ids == reference},
                          {"rounds", r.c.rounds},           {"plain_steps", r.c.plain_steps},
                          {"pauses", r.c.pauses},           {"lookup", counters_json(r.c.lookup)},
                          {"mtp", counters_json(r.c.mtp)}};
    }
    out["decode"][name] = wl;
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}
