// The slot's prefill rate (runtime/tiers/prefill_meter.hpp): measured by the slot's coordinator
// from every request's chunks, and handed to every tier's offer in its lookup, so each tier's
// cost rule weighs a read against the same measured prefill.
#include <catch2/catch.hpp>

#include "tests/support/cache_fixture.hpp"
#include "tests/support/fake_tier.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A tier that offers nothing and notes the rate each lookup carried.
class rate_watcher final : public fake_tier {
 public:
  explicit rate_watcher(std::vector<double>& seen) : seen_(seen) {}
  std::optional<resume_offer> offer(tier_lookup& l, std::size_t) override {
    seen_.push_back(l.prefill_tokens_per_s);
    return std::nullopt;
  }

 private:
  std::vector<double>& seen_;
};

}  // namespace

TEST_CASE("prefill meter: rows over time per chunk, blended, and nothing before a chunk",
          "[tiers][prefill_rate]") {
  prefill_meter m;
  CHECK(m.tokens_per_s() == 0);
  m.begin(100, 1'000'000'000);
  m.step(100, 1'500'000'000);  // no rows: nothing measured
  CHECK(m.tokens_per_s() == 0);
  m.step(600, 2'500'000'000);  // 500 rows in 1 s
  CHECK(m.tokens_per_s() == Approx(500.0));
  m.step(1600, 3'500'000'000);  // 1000 rows in 1 s, blended 0.7 / 0.3
  CHECK(m.tokens_per_s() == Approx(0.7 * 500 + 0.3 * 1000));
  // A new request's start is a mark, not a sample.
  m.begin(50, 10'000'000'000);
  CHECK(m.tokens_per_s() == Approx(650.0));
  m.step(50, 9'000'000'000);  // time going backwards is not a sample
  CHECK(m.tokens_per_s() == Approx(650.0));
}

TEST_CASE("the coordinator measures the slot's prefill and hands the rate to every tier's offer",
          "[tiers][prefill_rate]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  std::vector<double> seen;
  tiers.attach(std::make_unique<rate_watcher>(seen));
  auto e = make_engine(c);

  // The first request: nothing measured yet, so every tier is told 0 (an unmeasured rate reads).
  CHECK(tiers.prefill_tokens_per_s() == 0);
  serve_turn(tiers, *e, test_tokens(4 * g + 3, 811), 2, "a");
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == 0);
  // Its chunks measured the rate; the next request's lookup carries it.
  const double measured = tiers.prefill_tokens_per_s();
  CHECK(measured > 0);
  serve_turn(tiers, *e, test_tokens(4 * g + 3, 812), 2, "b");
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] == measured);
}
