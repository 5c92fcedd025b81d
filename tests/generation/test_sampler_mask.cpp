// The sampler's mask of defined ids: a model whose vocabulary is larger than the tokenizer's
// (embedding padding) or a tokenizer with holes never gets an undefined id sampled.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "runtime/generation/generation_session.hpp"
#include "runtime/generation/sampler.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// 400 logits (a model vocabulary past the tokenizer's 305), the largest on ids the tokenizer
// does not define: 280 (a hole) and 350 (past its vocabulary), then 'a'.
std::vector<float> padded_logits() {
  std::vector<float> l(400, 0.0f);
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(i % 7) * 0.1f;
  l[280] = 9.0f;
  l[350] = 10.0f;
  l['a'] = 5.0f;
  return l;
}

}  // namespace

TEST_CASE("the mask keeps undefined ids out of greedy and sampled picks", "[sampler][tokenizer]") {
  const tokenizer tok = tokenizer::from_json_file(bpe_fixture("tiny_qwen3.json"));
  const std::vector<float> logits = padded_logits();
  sampling_params p;
  REQUIRE(sample_token(logits, p, 0) == 350);  // without the mask: the padding id wins
  p.allowed = tok.defined_mask();
  CHECK(sample_token(logits, p, 0) == 'a');
  // A bias cannot bring an undefined id back.
  p.logit_bias = {{280, 100.0f}, {399, 100.0f}};
  CHECK(sample_token(logits, p, 0) == 'a');
  for (float temperature : {0.5f, 1.0f, 5.0f, 100.0f}) {
    p.temperature = temperature;
    for (float top_p : {1.0f, 0.9f}) {
      p.top_p = top_p;
      bool other = false;
      for (std::uint64_t step = 0; step < 400; ++step) {
        const token_id t = sample_token(logits, p, step);
        INFO("temperature " << temperature << ", top_p " << top_p << ", step " << step << ": " << t);
        REQUIRE(tok.is_defined(t));
        other = other || t != 'a';
      }
      if (temperature >= 5.0f) CHECK(other);  // the draw really spread over the defined ids
    }
  }
}

TEST_CASE("a mask that allows nothing is refused", "[sampler]") {
  sampling_params p;
  p.allowed = std::make_shared<const std::vector<bool>>(10, false);
  CHECK_THROWS_AS(sample_token(std::vector<float>(10, 0.0f), p, 0), std::invalid_argument);
  p.temperature = 1.0f;
  CHECK_THROWS_AS(sample_token(std::vector<float>(10, 0.0f), p, 0), std::invalid_argument);
}

TEST_CASE("a session never emits an id its tokenizer does not define", "[sampler][generation][tokenizer]") {
  const tokenizer tok = tokenizer::from_json_file(bpe_fixture("tiny_qwen3.json"));
  model_config c = test_config("tiny");
  c.vocab = 400;                 // the model's vocabulary is larger than the tokenizer's 305
  c.preset = "tiny, vocab 400";  // test_weights caches by preset name
  REQUIRE(c.vocab > tok.vocab_size());
  const auto e = make_engine(c);
  generation_job job;
  job.tok = tok;
  job.prompt = tok.encode("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", true);
  job.gen.max_tokens = 64;
  // Without the mask these would win every step.
  job.gen.sampling.logit_bias = {{280, 30.0f}, {350, 30.0f}, {399, 30.0f}};
  for (float temperature : {0.0f, 1.5f}) {
    job.gen.sampling.temperature = temperature;
    e->reset();
    generation_session s(*e, job);
    while (!s.done()) s.step(8);
    INFO("temperature " << temperature);
    REQUIRE_FALSE(s.output_ids().empty());
    for (token_id t : s.output_ids()) CHECK(tok.is_defined(t));
  }
}
