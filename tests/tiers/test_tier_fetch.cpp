// Fetching inside the tier protocol (tier.hpp): the read a taken offer needs is its tier's answer
// to fetch(), asked by the coordinator of the tier whose offer the plan took (nothing for a cold
// start or a device tier's offer); its reply is handed to every tier, and each takes only its
// own. The board's runner no longer asks which tier it is.
#include <catch2/catch.hpp>

#include "tests/support/cache_fixture.hpp"
#include "tests/support/fake_tier.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A tier that offers a start at `at` read from the disk: its fetch is that disk offer, and it
// restores only once a reply with bytes came.
class fetching_tier final : public fake_tier {
 public:
  explicit fetching_tier(std::size_t at) : at_(at) {}
  std::optional<resume_offer> offer(tier_lookup& l, std::size_t floor) override {
    return disk_like_offer(l, floor, at_);
  }
  tier_fetch fetch(const resume_offer& o) const override {
    disk_offer d;
    d.line = o.at;
    d.key = 77;
    return d;
  }
  void take_fetched(tier_fetched& reply) override {
    ++replies;
    if (auto* d = std::get_if<disk_fetched>(&reply)) damaged = d->damaged;
  }
  restore_result restore(state_adapter&, const resume_offer&) override {
    return damaged ? restore_result::failed_checks : restore_result::stale;
  }

  int replies = 0;
  bool damaged = false;

 private:
  std::size_t at_;
};

}  // namespace

TEST_CASE("the coordinator asks the taken offer's tier what to read, and hands the reply to every tier",
          "[tiers][fetch]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto own = std::make_unique<fetching_tier>(2 * g);
  fetching_tier& t = *own;
  tiers.attach(std::move(own));
  auto e = make_engine(c);

  // A prompt the tier's offer starts inside: the plan takes it, and its fetch is the tier's.
  const auto p = test_tokens(3 * g + 5, 901);
  resume_offer o = tiers.plan(p, request_info{});
  REQUIRE(o.source == cache_source::disk);
  const tier_fetch f = tiers.fetch(o);
  const auto* d = std::get_if<disk_offer>(&f);
  REQUIRE(d);
  CHECK(d->line == 2 * g);
  CHECK(d->key == 77);

  // The reply reaches the tier; its files failed their checks, so the restore falls back cold.
  tiers.take_fetched(disk_fetched{nullptr, true});
  CHECK(t.replies == 1);
  CHECK(t.damaged);
  tiers.restore(e->cache_state(), o);
  CHECK(o.source == cache_source::cold);
  e->reset();
  tiers.begin(o, e->cache_state());
  tiers.finish(e->cache_state());

  // A cold plan (a prompt too short for the tier's offer) needs no read.
  const auto shortp = test_tokens(g, 902);
  const resume_offer cold = tiers.plan(shortp, request_info{});
  CHECK(cold.source == cache_source::cold);
  CHECK(std::holds_alternative<std::monostate>(tiers.fetch(cold)));
  // A spill reply is not this tier's to act on, but it is handed it like every tier.
  spill_fetch none;
  tiers.take_fetched(&none);
  CHECK(t.replies == 2);
  CHECK(t.damaged);  // unchanged: not a disk reply
}

TEST_CASE("a device tier's offer needs no read", "[tiers][fetch]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  const auto p = test_tokens(3 * g + 5, 903);
  const auto first = serve_turn(tiers, *e, p, 2, "s");
  const auto next = next_prompt(p, first.output, 4, 904);
  request_info info;
  info.session_key = "s";
  const resume_offer o = tiers.plan(next, info);
  REQUIRE(o.source != cache_source::cold);
  CHECK(std::holds_alternative<std::monostate>(tiers.fetch(o)));
}
