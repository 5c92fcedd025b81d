// The state store and the response cache's key with an image in the prompt
// (runtime/core/token.hpp: an image's rows carry negative key ids): keys are compared and hashed
// as ids, one image row tells two prompts apart, and the store never resumes inside an image's
// first image_key_rows rows (runtime/core/token_prefix.hpp's rule).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "runtime/cache/response_cache.hpp"
#include "runtime/cache/response_key.hpp"
#include "runtime/cache/state_store.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/image_row_fixtures.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// n ids: text (40 + i % 200), with image `image`'s rows at [from, from + rows).
std::vector<token_id> prompt_with_image(std::size_t n, std::size_t from, std::size_t rows,
                                        std::uint32_t image = 1) {
  return testing::prompt_with_image(n, from, rows, image,
                                    [](std::size_t i) { return static_cast<token_id>(40 + i % 200); });
}

std::vector<token_id> head(const std::vector<token_id>& t, std::size_t n) {
  return std::vector<token_id>(t.begin(), t.begin() + static_cast<long>(n));
}

}  // namespace

TEST_CASE("state store: a snapshot ending inside an image's first rows is never a hit", "[store][image]") {
  const model_config c = test_config("tiny");
  auto eng = make_engine(c);
  eng->prefill(test_tokens(40));  // the rows; the keys are the store's
  memory_budget budget;
  budget.set_limit(budget_pool::store, std::size_t{1} << 30);
  state_store store(budget);
  const auto prompt = prompt_with_image(40, 10, 12);  // rows at [10, 22)
  for (std::size_t n : {8u, 13u})
    REQUIRE(store.insert(head(prompt, n), eng->cache_state(), eng->where(), state_store::kind::session));
  // 13 ends 3 rows into the image: the store answers with 8.
  auto hit = store.lookup(prompt, prompt.size() - 1);
  REQUIRE(hit);
  CHECK(hit->length == 8);
  // Five rows in, the whole digest is compared: that one serves.
  REQUIRE(store.insert(head(prompt, 15), eng->cache_state(), eng->where(), state_store::kind::session));
  hit = store.lookup(prompt, prompt.size() - 1);
  REQUIRE(hit);
  CHECK(hit->length == 15);
  // A prompt with another image there shares only the text before it.
  const auto other = prompt_with_image(40, 10, 12, 2);
  hit = store.lookup(other, other.size() - 1);
  REQUIRE(hit);
  CHECK(hit->length == 8);
  // One of the image's later rows differs: the snapshot at 15 is not its prefix.
  auto later = prompt;
  later[14] = image_row_id(3, 4);
  hit = store.lookup(later, later.size() - 1);
  REQUIRE(hit);
  CHECK(hit->length == 8);
  // A prompt that is nothing but the first rows of an image: no hit at all.
  state_store bare(budget);
  const auto image_first = prompt_with_image(20, 0, 10);
  REQUIRE(bare.insert(head(image_first, 3), eng->cache_state(), eng->where(), state_store::kind::prefix));
  CHECK_FALSE(bare.lookup(image_first, image_first.size() - 1));
  CHECK(bare.misses() == 1);
  CHECK(bare.collisions() == 0);
}

TEST_CASE("response cache: keys that differ in one image row differ, equal ones hit",
          "[cache][response][image]") {
  const auto prompt = prompt_with_image(30, 5, 9);
  auto key_of = [](std::vector<token_id> p) {
    response_key k;
    k.fingerprint = 0xf00d;
    k.prompt = std::move(p);
    k.max_tokens = 8;
    return k;
  };
  response_cache cache(1 << 20);
  REQUIRE(cache.put(key_of(prompt), cached_response{{7, 8, 9}, run_finish::stop}));
  const auto hit = cache.find(key_of(prompt));
  REQUIRE(hit);
  CHECK(hit->output == std::vector<token_id>{7, 8, 9});
  for (std::size_t at : {5u, 9u, 13u}) {
    INFO("row at " << at);
    auto other = prompt;
    other[at] ^= 1;
    REQUIRE(is_image_row(other[at]));
    CHECK(key_of(other) != key_of(prompt));
    CHECK(response_key_digest(key_of(other)) != response_key_digest(key_of(prompt)));
    CHECK_FALSE(cache.find(key_of(other)));
  }
  // The key of a board job keeps the rows as they are.
  board_job j;
  j.prompt = prompt;
  j.client()->greedy = true;
  j.sampling.temperature = 0;
  const auto k = response_key_of(j, 0xf00d);
  REQUIRE(k);
  CHECK(k->prompt == prompt);
}
