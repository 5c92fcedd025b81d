// Exactness of the engine's state against a cold prefill: the property every cache relies on,
// on the reference layout and on the qwen35 layout.
#include <catch2/catch.hpp>

#include <cstring>

#include "runtime/generation/generator.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("a resume from a grid line through the adapter equals a cold prefill", "[exact][engine]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp");
  const std::size_t line_index = GENERATE(1, 3, 5);
  INFO("preset " << preset << ", resumed at line " << line_index);
  const model_config c = test_config(preset);
  const std::size_t n = 5 * c.grid + 13;  // several lines, not a multiple of the grid
  const std::size_t line = line_index * c.grid;
  const auto prompt = test_tokens(n);

  auto cold = make_engine(c);
  cold->prefill(prompt);

  auto first = make_engine(c);
  first->prefill(slice(prompt, 0, line));
  const snapshot at_line = take_snapshot(first->cache_state());
  first.reset();

  auto resumed = make_engine(c);
  restore_snapshot(resumed->cache_state(), at_line);
  resumed->prefill(slice(prompt, line, n));

  REQUIRE(cold->length() == n);
  REQUIRE(resumed->length() == n);
  CHECK(same_bytes(resumed->last_logits(), cold->last_logits()));
  if (c.mtp) {
    REQUIRE(!cold->last_draft_logits().empty());
    CHECK(same_bytes(resumed->last_draft_logits(), cold->last_draft_logits()));
  }
  require_same_state(take_snapshot(resumed->cache_state()), take_snapshot(cold->cache_state()),
                     cold->layout());

  // Greedy decoding from both: identical tokens, and identical state after it.
  generation_request r;
  r.max_tokens = 24;
  const auto a = generator(*cold, r).run();
  const auto b = generator(*resumed, r).run();
  REQUIRE(a.size() == 24);
  CHECK(a == b);
  require_same_state(take_snapshot(resumed->cache_state()), take_snapshot(cold->cache_state()),
                     cold->layout());
}

TEST_CASE("a restored state with one wrong byte does not pass for the cold one", "[exact][engine]") {
  // The comparisons above have teeth: a single flipped bit in a section or a view row restored
  // into the engine changes the logits of the rest of the prefill.
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t line = 2 * c.grid, n = 3 * c.grid + 7;
  const auto prompt = test_tokens(n);
  auto cold = make_engine(c);
  cold->prefill(prompt);
  auto first = make_engine(c);
  first->prefill(slice(prompt, 0, line));
  const snapshot good = take_snapshot(first->cache_state());

  const bool flip_section = GENERATE(true, false);
  snapshot bad = good;
  auto& bytes = flip_section ? bad.sections[0] : bad.views[0];
  bytes[bytes.size() / 2 + 1] ^= 0x10;
  auto resumed = make_engine(c);
  restore_snapshot(resumed->cache_state(), bad);
  resumed->prefill(slice(prompt, line, n));
  CHECK_FALSE(same_bytes(resumed->last_logits(), cold->last_logits()));
}

TEST_CASE("an off-grid resume does not reproduce the cold prefill", "[exact][engine]") {
  // Why the grid matters. A prefill that starts at p, off the grid, first runs rows
  // [p, next line) as one chunk; the cold prefill ran [line, next line). The chunked delta rule
  // groups rows into sub-chunks counted from the chunk's first row, so the two forwards sum the
  // same terms in a different order and round differently: the recurrent state after the
  // chunk, and every row above it, differ in their last bits. The engine allows such a resume
  // (an end anchor sits off the grid), but it is a session resume held to the greedy gate, and
  // the caches restore from lines only when they promise a cold prefill's bits.
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t p = 2 * c.grid + 5, n = 4 * c.grid + 3;
  const auto prompt = test_tokens(n);
  auto cold = make_engine(c);
  cold->prefill(prompt);

  auto first = make_engine(c);
  first->prefill(slice(prompt, 0, p));
  auto resumed = make_engine(c);
  restore_snapshot(resumed->cache_state(), take_snapshot(first->cache_state()));
  resumed->prefill(slice(prompt, p, n));

  const snapshot a = take_snapshot(resumed->cache_state());
  const snapshot b = take_snapshot(cold->cache_state());
  const auto s = *cold->layout().section_index("gdn.S");
  const auto k = *cold->layout().view_index("K");
  const std::size_t row = cold->layout().views[k].bytes_per_token;
  // Rows below the line under p agree. Rows [line, p) came from a short last chunk of the first
  // prefill, the state at p too: a chunk's bits depend on where it ends as well as where it
  // starts (the kernels' blocking follows the chunk's length), which is why the caches keep
  // anchors at lines only and always re-run a partial last chunk.
  const std::size_t below = p / c.grid * c.grid;
  CHECK(std::memcmp(a.views[k].data(), b.views[k].data(), below * row) == 0);
  CHECK(std::memcmp(a.sections[s].data(), b.sections[s].data(), a.sections[s].size()) != 0);
  CHECK(std::memcmp(a.views[k].data() + (n - 1) * row, b.views[k].data() + (n - 1) * row, row) != 0);
  CHECK_FALSE(same_bytes(resumed->last_logits(), cold->last_logits()));
}

TEST_CASE("two cold runs are identical", "[exact][engine]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny-mtp", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const auto prompt = test_tokens(3 * c.grid + 1, 11);
  auto a = make_engine(c);
  auto b = make_engine(c);
  a->prefill(prompt);
  b->prefill(prompt);
  CHECK(same_bytes(a->last_logits(), b->last_logits()));
  require_same_state(take_snapshot(a->cache_state()), take_snapshot(b->cache_state()), a->layout());
  // The same engine reset and run again gives the same bits too.
  a->reset();
  a->prefill(prompt);
  CHECK(same_bytes(a->last_logits(), b->last_logits()));
}

TEST_CASE("a sampled generation is keyed by (seed, step)", "[exact][engine][sampling]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny", "qwen35-tiny");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const auto prompt = test_tokens(2 * c.grid + 9, 5);
  generation_request r;
  r.sampling.temperature = 1.3f;
  r.sampling.top_p = 0.95f;
  r.sampling.seed = 1234;
  r.max_tokens = 40;

  auto a = make_engine(c);
  a->prefill(prompt);
  const auto whole = generator(*a, r).run();
  REQUIRE(whole.size() == 40);

  SECTION("the same seed gives the same tokens run after run") {
    auto b = make_engine(c);
    b->prefill(prompt);
    CHECK(generator(*b, r).run() == whole);
  }
  SECTION("another seed gives other tokens") {
    auto b = make_engine(c);
    b->prefill(prompt);
    generation_request other = r;
    other.sampling.seed = 99;
    CHECK(generator(*b, other).run() != whole);
  }
  SECTION("stopped at step k and continued from (state, seed, k) in a fresh engine") {
    const int k = GENERATE(1, 17);
    auto b = make_engine(c);
    b->prefill(prompt);
    generation_request first = r;
    first.max_tokens = k;
    generator g(*b, first);
    const auto head = g.run();
    REQUIRE(head.size() == static_cast<std::size_t>(k));
    const snapshot cut = take_snapshot(b->cache_state());
    b.reset();

    auto resumed = make_engine(c);
    restore_snapshot(resumed->cache_state(), cut);
    generation_request rest = r;
    rest.max_tokens = r.max_tokens - k;
    rest.first_step = g.next_step();
    rest.pending = g.pending();
    auto tail = generator(*resumed, rest).run();
    std::vector<token_id> joined = head;
    joined.insert(joined.end(), tail.begin(), tail.end());
    CHECK(joined == whole);
  }
}

TEST_CASE("greedy decode agrees with a prefill of the same tokens", "[engine]") {
  // Decode uses the per-token form and prefill the chunked form: the same function, different
  // rounding. They must agree closely (not bitwise).
  const std::string preset = GENERATE(as<std::string>{}, "tiny-mtp", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const auto prompt = test_tokens(c.grid + 20, 8);
  auto a = make_engine(c);
  a->prefill(prompt);
  auto b = make_engine(c);
  b->prefill(slice(prompt, 0, prompt.size() - 3));
  for (std::size_t i = prompt.size() - 3; i < prompt.size(); ++i) b->decode(prompt[i]);
  REQUIRE(a->last_logits().size() == b->last_logits().size());
  float worst = 0.0f;
  for (std::size_t i = 0; i < a->last_logits().size(); ++i)
    worst = std::max(worst, std::abs(a->last_logits()[i] - b->last_logits()[i]));
  CHECK(worst < 1e-3f);
}
