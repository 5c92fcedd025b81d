#pragma once
// One request through the device tiers as the board runs it, without actors: lookup, restore or
// cold reset, prefill chunk by chunk with the tiers anchoring, greedy decode, end of generation.
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/tiers/cache_tiers.hpp"
#include "runtime/text/output/end_record_builder.hpp"
#include "runtime/generation/generator.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"

namespace anchorage::testing {

struct turn_result {
  resume_offer offer;
  std::vector<token_id> output;  // emitted tokens; the last one is pending, not in the rows
  std::size_t prefilled = 0;
  cache_via via = cache_via::none;  // what served it beyond the source (stash, pin, park, ...)
};

inline turn_result serve_turn(cache_tiers& tiers, engine& e, const std::vector<token_id>& prompt,
                              int max_tokens, const std::string& session = "s") {
  turn_result r;
  request_info info;
  info.session_key = session;
  info.max_tokens = static_cast<std::size_t>(std::max(max_tokens, 0));
  r.offer = tiers.plan(prompt, info);
  if (r.offer.source != cache_source::cold)
    tiers.restore(e.cache_state(), r.offer);  // a failed disk read: cold
  if (r.offer.source == cache_source::cold) e.reset();
  tiers.begin(r.offer, e.cache_state());
  r.via = tiers.running_via();
  const std::size_t from = e.length();
  e.begin_prefill(slice(r.offer.served, from, r.offer.served.size()));
  while (e.prefill_remaining() > 0) {
    e.prefill_step();
    tiers.after_prefill_step(e.cache_state(), e.where());
  }
  r.prefilled = e.length() - from;
  if (max_tokens > 0) {
    generation_request g;
    g.max_tokens = max_tokens;
    r.output = generator(e, g).run();
    generation_outcome o;
    o.served = &r.offer.served;
    o.output = &r.output;
    o.rows = e.length();
    tiers.end_generation(e.cache_state(), e.where(), build_end_record(o));
  }
  tiers.finish(e.cache_state());
  return r;
}

// The prompt a client sends next: everything it had, the whole answer, then `extra` new tokens.
inline std::vector<token_id> next_prompt(const std::vector<token_id>& served,
                                         const std::vector<token_id>& answer, std::size_t extra,
                                         std::uint64_t seed) {
  std::vector<token_id> p = served;
  p.insert(p.end(), answer.begin(), answer.end());
  const auto more = test_tokens(extra, seed);
  p.insert(p.end(), more.begin(), more.end());
  return p;
}

inline cache_options small_cache(bool end_anchor) {
  cache_options o;
  o.resident_bytes = 64ULL << 20;
  o.store_bytes = 64ULL << 20;
  o.store_entry_bytes = 32ULL << 20;
  o.end_anchor = end_anchor;
  return o;
}

}  // namespace anchorage::testing
