// The sampler: greedy and nucleus picks, and OpenAI logit_bias on both.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "runtime/generation/sampler.hpp"

using namespace anchorage;

namespace {

// Deterministic logits in [-4, 4) over a 272-id vocabulary, with `top` the clear favourite.
std::vector<float> test_logits(token_id top) {
  std::vector<float> l(272);
  std::uint64_t x = 0x2545f4914f6cdd1dULL;
  for (auto& v : l) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = static_cast<float>(x % 8000) / 1000.0f - 4.0f;
  }
  l[static_cast<std::size_t>(top)] = 8.0f;
  return l;
}

sampling_params sampled(float temperature, float top_p, std::uint64_t seed = 11) {
  sampling_params p;
  p.temperature = temperature;
  p.top_p = top_p;
  p.seed = seed;
  return p;
}

}  // namespace

TEST_CASE("a +100 bias forces a token, greedy and sampled", "[sampler]") {
  const std::vector<float> logits = test_logits(65);
  const std::vector<float> before = logits;
  sampling_params greedy;
  REQUIRE(sample_token(logits, greedy, 0) == 65);
  greedy.logit_bias = {{200, 100.0f}};
  CHECK(sample_token(logits, greedy, 0) == 200);
  for (const sampling_params& base : {sampled(1.0f, 1.0f), sampled(2.0f, 1.0f), sampled(0.7f, 0.5f)}) {
    sampling_params p = base;
    p.logit_bias = {{17, 100.0f}};
    for (std::uint64_t step = 0; step < 500; ++step) CHECK(sample_token(logits, p, step) == 17);
  }
  CHECK(logits == before);  // the bias is applied to a copy
}

TEST_CASE("a -100 bias bans a token, greedy and sampled", "[sampler]") {
  const std::vector<float> logits = test_logits(65);
  sampling_params greedy;
  greedy.logit_bias = {{65, -100.0f}};
  std::vector<float> without = logits;
  without[65] = -1e30f;
  const token_id second =
      static_cast<token_id>(std::max_element(without.begin(), without.end()) - without.begin());
  CHECK(sample_token(logits, greedy, 0) == second);

  sampling_params p = sampled(1.0f, 1.0f);
  int hits = 0;
  for (std::uint64_t step = 0; step < 1000; ++step) hits += sample_token(logits, p, step) == 65;
  REQUIRE(hits > 100);  // the favourite without the bias
  p.logit_bias = {{65, -100.0f}};
  for (std::uint64_t step = 0; step < 1000; ++step) CHECK(sample_token(logits, p, step) != 65);
}

TEST_CASE("biases add up and shift the distribution, not the draws", "[sampler]") {
  const std::vector<float> logits = test_logits(65);
  // a bias that leaves the order alone leaves the greedy pick and every sampled pick alone
  sampling_params p = sampled(0.9f, 0.95f);
  sampling_params q = p;
  q.logit_bias = {{65, 0.0f}, {3, 0.0f}};
  for (std::uint64_t step = 0; step < 200; ++step)
    CHECK(sample_token(logits, p, step) == sample_token(logits, q, step));
  // two entries for one id add up: +60 and +60 beat the favourite's lead, -60 and +60 cancel
  sampling_params g;
  g.logit_bias = {{9, 60.0f}, {9, -60.0f}};
  CHECK(sample_token(logits, g, 0) == 65);
  g.logit_bias = {{9, 60.0f}, {9, 60.0f}};
  CHECK(sample_token(logits, g, 0) == 9);
}

TEST_CASE("a bias outside the logits is refused", "[sampler]") {
  const std::vector<float> logits = test_logits(65);
  sampling_params p;
  p.logit_bias = {{272, 1.0f}};
  CHECK_THROWS_AS(sample_token(logits, p, 0), std::invalid_argument);
  p.logit_bias = {{-1, 1.0f}};
  CHECK_THROWS_AS(sample_token(logits, p, 0), std::invalid_argument);
}
