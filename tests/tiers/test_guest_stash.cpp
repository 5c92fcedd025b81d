// The guests' stash and the tiers' counters on their own, and the coordinator looping over a
// tier it does not know.
#include <catch2/catch.hpp>

#include "runtime/tiers/cache_tiers.hpp"
#include "runtime/tiers/guest_stash.hpp"
#include "runtime/tiers/tier_counters.hpp"
#include "tests/support/cache_fixture.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("a guest is short and under a quarter of the resident rows", "[tiers][guest]") {
  memory_budget budget;
  guest_stash g(budget, 100, kernels::backend::cpu);
  CHECK(g.is_guest(100, 401));
  CHECK_FALSE(g.is_guest(100, 400));    // not under a quarter
  CHECK_FALSE(g.is_guest(101, 10000));  // over guest_max
  guest_stash off(budget, 0, kernels::backend::cpu);
  CHECK_FALSE(off.is_guest(1, 10000));
  // The rest of its prompt, its output, the hidden reserve and two margins of 512.
  CHECK(guest_stash::need(300, 100, 16, 8) == 200 + 16 + 8 + 1024);
  CHECK(guest_stash::need(100, 200, 0, 0) == 1024);
}

TEST_CASE("the stash holds the rows a guest can write and gives them back byte for byte", "[tiers][guest]") {
  const model_config c = test_config("tiny");
  auto e = make_engine(c);
  const auto prompt = test_tokens(static_cast<std::size_t>(4 * c.grid), 620);
  e->prefill(prompt);
  const snapshot before = take_snapshot(e->cache_state());
  memory_budget budget;
  guest_stash g(budget, 8192, e->where());
  const std::size_t rows = e->length();
  const std::size_t bytes = row_copy::bytes_for(e->layout(), 10, rows);

  SECTION("refused when the pool cannot hold them") {
    budget.set_limit(budget_pool::stash, bytes - 1);
    CHECK_FALSE(g.take(e->cache_state(), 10, rows, 100000));
    CHECK(g.refusals() == 1);
    CHECK_FALSE(g.holding());
    CHECK(budget.used(budget_pool::stash) == 0);
  }
  SECTION("taken, overwritten, given back") {
    budget.set_limit(budget_pool::stash, bytes);
    REQUIRE(g.take(e->cache_state(), 10, rows, 100000));  // capped at the resident rows
    CHECK(g.stashed() == 1);
    CHECK(budget.used(budget_pool::stash) == bytes);
    // A guest resumes at 10 and writes over the rows above it.
    e->cache_state().set_valid_length(10);
    e->prefill(test_tokens(rows - 10, 621));
    CHECK_FALSE(take_snapshot(e->cache_state()).views == before.views);
    g.give_back(e->cache_state());
    CHECK_FALSE(g.holding());
    CHECK(budget.used(budget_pool::stash) == 0);
    CHECK(take_snapshot(e->cache_state()).views == before.views);  // every row, byte for byte
  }
}

TEST_CASE("tier counters count hits, misses and the tokens hits saved", "[tiers]") {
  tier_counters t;
  t.hit(100);
  t.hit(28);
  t.miss();
  CHECK(t.hits() == 2);
  CHECK(t.misses() == 1);
  CHECK(t.tokens_saved() == 128);
}

namespace {

// A deeper tier the coordinator knows only through the interface: it offers `at` for every
// prompt longer than it, and its restore fails (a read that found damage).
struct failing_tier final : tier {
  std::size_t at;
  int offers = 0, restores = 0, begins = 0, steps = 0, finishes = 0;
  explicit failing_tier(std::size_t a) : at(a) {}
  bool serves(cache_source s) const override { return s == cache_source::disk; }
  std::vector<cache_tier> names() const override { return {cache_tier::disk}; }
  std::optional<resume_offer> offer(tier_lookup& l, std::size_t floor) override {
    ++offers;
    if (l.prompt->size() <= at || at <= floor) return std::nullopt;
    resume_offer o;
    o.source = cache_source::disk;
    o.at = at;
    o.served = *l.prompt;
    o.rows_replaced = true;
    return o;
  }
  restore_result restore(state_adapter&, const resume_offer&) override {
    return ++restores, restore_result::stale;
  }
  void begin(const resume_offer&, const state_adapter&, const tier_lookup&, bool) override { ++begins; }
  void after_prefill_step(const state_adapter&, kernels::backend) override { ++steps; }
  void end_generation(const state_adapter&, kernels::backend, end_record) override {}
  void finish(state_adapter&) override { ++finishes; }
  void clear(cache_tier) override {}
  void stats(cache_stats& into) const override {
    into.disk.emplace();
    into.disk->store.folder = "fake";
  }
};

}  // namespace

TEST_CASE("the coordinator asks every tier in order and falls back when a restore fails", "[tiers]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto fake = std::make_unique<failing_tier>(3 * g);
  failing_tier& f = *fake;
  tiers.attach(std::move(fake));
  auto e = make_engine(c);
  const auto prompt = test_tokens(4 * g + 3, 622);
  const auto first = serve_turn(tiers, *e, prompt, 0);
  // The fake offered later than cold, failed its read: the request went cold, with every tier's
  // begin and steps.
  CHECK(f.offers == 1);
  CHECK(f.restores == 1);
  CHECK(first.offer.source == cache_source::cold);
  CHECK(f.begins == 1);
  CHECK(f.steps == 5);
  CHECK(f.finishes == 1);
  CHECK(nlohmann::json(tiers.stats())["disk"]["folder"] == "fake");
  CHECK(tiers.has(cache_tier::disk));
  // The second time the resident prefix starts later than the fake: the fake is not taken.
  const auto second = serve_turn(tiers, *e, prompt, 0);
  CHECK(second.offer.source == cache_source::resident);
  CHECK(second.offer.at == 4 * g);
  CHECK(f.restores == 1);
}
