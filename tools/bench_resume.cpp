// Time to first token of a follow-up turn resumed from the device tiers against a cold prefill
// of the same prompt, in one process, printed as one JSON object. For each context length L:
// turn 1 prefills L tokens cold and answers `--answer` tokens; the follow-up is that prompt, the
// whole answer and `--delta` new tokens (a tool result):
//   end:       resumed where the answer ended (the end anchor), forwarding the new tokens only;
//   resident:  the same follow-up with the answer edited by the client, resumed at the last
//              grid anchor of turn 1's prompt;
//   cold:      the follow-up prefilled from position 0.
// Usage: anchorage-bench-resume [--preset small] [--context 8192,32768] [--answer 64]
//                               [--delta 128] [--device cpu|cuda]
#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/core/log.hpp"
#include "runtime/engine/blas_setup.hpp"
#include "runtime/tiers/cache_tiers.hpp"
#include "runtime/text/output/end_record_builder.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/engine/engine_options.hpp"
#include "runtime/generation/generator.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/generation/sampler.hpp"
#include "tools/bench_common.hpp"

using namespace anchorage;
using namespace anchorage::bench;

namespace {

using clock_type = std::chrono::steady_clock;

struct turn_timing {
  resume_offer offer;
  double ttft_s = 0;
  double restore_s = 0;
  std::size_t prefilled = 0;
};

// One request as the board runs it: lookup, restore (or cold reset), prefill with the tiers
// anchoring, the first token sampled. `tiers` null: a cold prefill with no tier involved.
turn_timing first_token(engine& e, cache_tiers* tiers, const std::vector<token_id>& prompt) {
  turn_timing t;
  const auto t0 = clock_type::now();
  if (tiers) {
    t.offer = tiers->plan(prompt);
    if (t.offer.source == cache_source::cold)
      e.reset();
    else
      tiers->restore(e.cache_state(), t.offer);
    tiers->begin(t.offer, e.cache_state());
  } else {
    t.offer.served = prompt;
    e.reset();
  }
  t.restore_s = seconds_since(t0);
  const std::size_t from = e.length();
  e.begin_prefill({t.offer.served.begin() + static_cast<long>(from), t.offer.served.end()});
  while (e.prefill_remaining() > 0) {
    e.prefill_step();
    if (tiers) tiers->after_prefill_step(e.cache_state(), e.where());
  }
  sample_token(e.last_logits(), sampling_params{}, 0);
  t.ttft_s = seconds_since(t0);
  if (tiers) tiers->finish(e.cache_state());
  t.prefilled = e.length() - from;
  return t;
}

nlohmann::json timing_json(const turn_timing& t) {
  return {{"source", to_string(t.offer.source)},
          {"resumed_at", t.offer.at},
          {"prefilled", t.prefilled},
          {"ttft_s", t.ttft_s},
          {"restore_s", t.restore_s}};
}

}  // namespace

int main(int argc, char** argv) {
  select_blas_core(argv);
  engine_options eo;
  eo.preset = "small";
  std::vector<int> contexts = {8192, 32768};
  int answer = 64, delta = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--context")
      contexts = parse_list(v);
    else if (a == "--answer")
      answer = std::stoi(v);
    else if (a == "--delta")
      delta = std::stoi(v);
    else if (!eo.parse(a, v)) {
      log_error() << "unknown argument " << a;
      return 2;
    }
  }
  const model_config c = eo.config();
  engine e(c, random_weights(c, eo.weights_seed), eo.backend());
  nlohmann::json out;
  out["preset"] = c.preset;
  out["grid"] = c.grid;
  out["answer_tokens"] = answer;
  out["delta_tokens"] = delta;
  out["runs"] = nlohmann::json::array();
  for (int L : contexts) {
    cache_tiers tiers(cache_options{});
    const auto prompt = prose(static_cast<std::size_t>(L), 1);
    const turn_timing first = first_token(e, &tiers, prompt);
    generation_request g;
    g.max_tokens = answer;
    const std::vector<token_id> output = generator(e, g).run();
    generation_outcome o;
    o.served = &first.offer.served;
    o.output = &output;
    o.rows = e.length();
    tiers.end_generation(e.cache_state(), e.where(), build_end_record(o));

    std::vector<token_id> follow = prompt;
    follow.insert(follow.end(), output.begin(), output.end());
    const auto tool_result = prose(static_cast<std::size_t>(delta), 2);
    follow.insert(follow.end(), tool_result.begin(), tool_result.end());
    const turn_timing end = first_token(e, &tiers, follow);

    std::vector<token_id> edited = follow;
    edited[prompt.size() + 1] = edited[prompt.size() + 1] == 'x' ? 'y' : 'x';
    const turn_timing resident = first_token(e, &tiers, edited);

    const turn_timing cold = first_token(e, nullptr, follow);
    out["runs"].push_back({{"context", L},
                           {"followup_tokens", follow.size()},
                           {"turn1_cold", timing_json(first)},
                           {"end", timing_json(end)},
                           {"resident", timing_json(resident)},
                           {"cold", timing_json(cold)},
                           {"cold_over_end", cold.ttft_s / end.ttft_s},
                           {"cold_over_resident", cold.ttft_s / resident.ttft_s}});
    log_info() << "context " << L << ": cold " << cold.ttft_s << " s, end " << end.ttft_s << " s, resident "
               << resident.ttft_s << " s";
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}
