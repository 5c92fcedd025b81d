// Image rows in the engine (runtime/engine/prompt_media.hpp): Qwen3.5's multimodal positions,
// embeddings taken from the image, and the exactness the caches rest on with an image in the
// prompt: a prefill resumed from a grid line equals a cold one bit for bit, and rows below the
// first image are the same with or without it.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "runtime/engine/prompt_media.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::shared_ptr<const std::vector<float>> random_embeddings(std::size_t rows, int d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  auto v = std::make_shared<std::vector<float>>(rows * static_cast<std::size_t>(d));
  for (float& x : *v) x = n(rng);
  return v;
}

// `text` tokens, then an image of grid gh x gw (key ids below 0), then `after` tokens.
struct image_prompt {
  std::vector<token_id> tokens;
  image_span span;
};

image_prompt make_prompt(std::size_t text, int gh, int gw, std::size_t after, int d, std::uint64_t seed) {
  image_prompt p;
  p.tokens = test_tokens(text, 5);
  p.span.start = text;
  p.span.grid_h = gh;
  p.span.grid_w = gw;
  p.span.embeddings = random_embeddings(p.span.rows(), d, seed);
  for (std::size_t i = 0; i < p.span.rows(); ++i) p.tokens.push_back(-1000000 - static_cast<token_id>(i));
  const auto tail = test_tokens(after, 9);
  p.tokens.insert(p.tokens.end(), tail.begin(), tail.end());
  return p;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("prompt_media gives transformers' get_rope_index positions", "[engine][images]") {
  // 3 text rows, an image of merged grid 2 x 3 at row 3, then text: the image sits at p = 3 and
  // the text after it continues at 3 + max(2, 3) = 6 (Qwen2-VL/Qwen3.5 get_rope_index).
  image_span s;
  s.start = 3;
  s.grid_h = 2;
  s.grid_w = 3;
  s.embeddings = random_embeddings(6, 4, 1);
  const prompt_media m({s}, 4);
  using p3 = std::array<int, 3>;
  CHECK(m.position(0) == p3{0, 0, 0});
  CHECK(m.position(2) == p3{2, 2, 2});
  CHECK(m.position(3) == p3{3, 3, 3});
  CHECK(m.position(5) == p3{3, 3, 5});
  CHECK(m.position(6) == p3{3, 4, 3});
  CHECK(m.position(8) == p3{3, 4, 5});
  CHECK(m.position(9) == p3{6, 6, 6});
  CHECK(m.position(10) == p3{7, 7, 7});
  CHECK(m.span_of(2) == nullptr);
  CHECK(m.span_of(3) != nullptr);
  CHECK(m.span_of(8) != nullptr);
  CHECK(m.span_of(9) == nullptr);

  // a second, tall image right after: 4 x 1 at row 9 takes p = 6; text after it p = 6 + 4
  image_span t;
  t.start = 9;
  t.grid_h = 4;
  t.grid_w = 1;
  t.embeddings = random_embeddings(4, 4, 2);
  const prompt_media two({s, t}, 4);
  CHECK(two.position(9) == p3{6, 6, 6});
  CHECK(two.position(12) == p3{6, 9, 6});
  CHECK(two.position(13) == p3{10, 10, 10});

  CHECK_THROWS_AS(prompt_media({t, s}, 4), std::invalid_argument);  // out of order
  image_span short_rows = s;
  short_rows.embeddings = random_embeddings(5, 4, 3);
  CHECK_THROWS_AS(prompt_media({short_rows}, 4), std::invalid_argument);
}

TEST_CASE("a prefill with an image resumed from a grid line equals a cold one", "[engine][images]") {
  const model_config c = test_config("qwen35-tiny");
  REQUIRE(c.grid == 32);
  // the image's 5 x 6 = 30 rows span the line at 32
  const image_prompt p = make_prompt(20, 5, 6, 25, c.d_model, 11);
  auto cold = make_engine(c);
  cold->set_media(prompt_media({p.span}, c.d_model));
  cold->prefill(p.tokens);
  const snapshot want = take_snapshot(cold->cache_state());
  const std::vector<float> want_logits = cold->last_logits();

  auto warm = make_engine(c);
  warm->set_media(prompt_media({p.span}, c.d_model));
  warm->prefill(std::vector<token_id>(p.tokens.begin(), p.tokens.begin() + 32));
  const snapshot line = take_snapshot(warm->cache_state());
  // a fresh engine restored at the line, as a cache tier restores it
  auto resumed = make_engine(c);
  restore_snapshot(resumed->cache_state(), line);
  resumed->set_media(prompt_media({p.span}, c.d_model));
  resumed->prefill(std::vector<token_id>(p.tokens.begin() + 32, p.tokens.end()));
  const snapshot got = take_snapshot(resumed->cache_state());
  CHECK(got.sections == want.sections);
  CHECK(got.views == want.views);
  CHECK(same_bits(resumed->last_logits(), want_logits));

  // and from right after the image (row 50, off the grid): a chunk ends there in both
  const std::size_t end = p.span.end();
  REQUIRE(end % 32 != 0);
  auto upto = make_engine(c);
  upto->set_media(prompt_media({p.span}, c.d_model));
  upto->prefill(std::vector<token_id>(p.tokens.begin(), p.tokens.begin() + static_cast<long>(end)));
  auto after = make_engine(c);
  restore_snapshot(after->cache_state(), take_snapshot(upto->cache_state()));
  after->set_media(prompt_media({p.span}, c.d_model));
  after->prefill(std::vector<token_id>(p.tokens.begin() + static_cast<long>(end), p.tokens.end()));
  const snapshot from_end = take_snapshot(after->cache_state());
  CHECK(from_end.sections == want.sections);
  CHECK(from_end.views == want.views);
  CHECK(same_bits(after->last_logits(), want_logits));
}

TEST_CASE("rows below the first image do not depend on it, the image's pixels reach the logits",
          "[engine][images]") {
  const model_config c = test_config("qwen35-tiny");
  const image_prompt p = make_prompt(32, 3, 4, 10, c.d_model, 21);
  const std::vector<token_id> text(p.tokens.begin(), p.tokens.begin() + 32);

  auto plain = make_engine(c);
  plain->prefill(text);
  auto with = make_engine(c);
  with->set_media(prompt_media({p.span}, c.d_model));
  with->prefill(text);
  const snapshot a = take_snapshot(plain->cache_state());
  const snapshot b = take_snapshot(with->cache_state());
  CHECK(a.sections == b.sections);
  CHECK(a.views == b.views);

  // the same key ids with other embeddings (another image) give other logits
  with->prefill(std::vector<token_id>(p.tokens.begin() + 32, p.tokens.end()));
  image_span other = p.span;
  other.embeddings = random_embeddings(other.rows(), c.d_model, 22);
  auto another = make_engine(c);
  another->set_media(prompt_media({other}, c.d_model));
  another->prefill(p.tokens);
  CHECK_FALSE(same_bits(with->last_logits(), another->last_logits()));
}

TEST_CASE("decode after an image continues at the text position the image leaves", "[engine][images]") {
  const model_config c = test_config("qwen35-tiny");
  const image_prompt p = make_prompt(8, 4, 5, 6, c.d_model, 31);  // 20 rows that take 5 positions
  const token_id next = 77;
  // decode `next` after the prompt, against prefilling it with the prompt (the chunked form:
  // other bits in the last places, the same arithmetic otherwise)
  auto stepped = make_engine(c);
  stepped->set_media(prompt_media({p.span}, c.d_model));
  stepped->prefill(p.tokens);
  stepped->decode(next);
  auto whole = make_engine(c);
  whole->set_media(prompt_media({p.span}, c.d_model));
  std::vector<token_id> all = p.tokens;
  all.push_back(next);
  whole->prefill(all);
  const std::vector<float>& a = stepped->last_logits();
  const std::vector<float>& b = whole->last_logits();
  float diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  CHECK(diff <= 1e-4f * scale);
}

TEST_CASE("image rows need their image", "[engine][images]") {
  const model_config c = test_config("qwen35-tiny");
  const image_prompt p = make_prompt(4, 2, 2, 2, c.d_model, 41);
  auto e = make_engine(c);
  CHECK_THROWS_AS(e->prefill(p.tokens), std::invalid_argument);  // no media: a key id is no token
  CHECK(e->length() == 0);
  image_span narrow = p.span;
  narrow.embeddings = random_embeddings(narrow.rows(), c.d_model - 1, 1);
  CHECK_THROWS_AS(e->set_media(prompt_media({narrow}, c.d_model - 1)), std::invalid_argument);
  e->set_media(prompt_media({p.span}, c.d_model));
  e->prefill(p.tokens);
  CHECK(e->length() == p.tokens.size());
  e->reset();
  CHECK(e->media().empty());

  auto reference = make_engine(test_config("tiny"));
  CHECK_THROWS_AS(reference->set_media(prompt_media({p.span}, c.d_model)), std::invalid_argument);
}
