#pragma once
// Helpers for the generation session tests: jobs (greedy, thinking with a budget), the close
// phrase's hidden length, parsing ids as the client would, and running a session to its end.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/generation/generation_session.hpp"
#include "runtime/text/output/output_parser.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/engine_fixture.hpp"

namespace anchorage::testing {

inline generation_job greedy_job(std::vector<token_id> prompt, int max_tokens) {
  generation_job j;
  j.prompt = std::move(prompt);
  j.gen.max_tokens = max_tokens;
  return j;
}

// A chat with thinking as render_request makes it: the prompt opened the reasoning block.
// </think> is banned so that only the budget can close the block.
inline generation_job thinking_job(std::vector<token_id> prompt, int max_tokens, long budget) {
  generation_job j = greedy_job(std::move(prompt), max_tokens);
  j.rules.parse_reasoning = true;
  j.rules.starts_in_reasoning = true;
  j.rules.reasoning_budget = budget;
  j.gen.sampling.logit_bias = {{special_tokens::think_close, -100.0f}};
  return j;
}

inline std::vector<token_id> close_phrase_ids() { return tokenizer{}.encode(reasoning_close_phrase, true); }

// How many of the phrase's tokens come before </think>: the hidden part.
inline std::size_t close_phrase_hidden() {
  const auto ids = close_phrase_ids();
  return static_cast<std::size_t>(std::find(ids.begin(), ids.end(), special_tokens::think_close) -
                                  ids.begin());
}

// What a parser makes of `ids` (from the start of the output).
inline assistant_output parse(const std::vector<token_id>& ids, bool starts_in_reasoning = true) {
  output_parser p(true, false, starts_in_reasoning);
  for (token_id t : ids) p.feed(t);
  p.finish();
  return p.result();
}

inline std::string run_all(generation_session& s, int block, int* steps = nullptr) {
  std::string text;
  int n = 0;
  while (!s.done()) {
    for (const auto& d : s.step(block).deltas) text += d.text;
    ++n;
  }
  if (steps) *steps = n;
  return text;
}

}  // namespace anchorage::testing
