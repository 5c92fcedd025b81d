// Miss reasons (docs/CACHES.md): for every request that resumed less deep than its prompt shared
// with what the server held, the coordinator names why and counts the tokens it cost. One case
// per reason, each through the coordinator as the board drives it (cache_tiers with the tiny
// engine); the reasons a disk or spill read gives are made by a tier that behaves as one would.
#include <catch2/catch.hpp>

#include "tests/support/cache_fixture.hpp"
#include "tests/support/fake_tier.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// What the record holds of a turn: its prompt, then its output but the last (pending) token.
std::size_t rows_of(const std::vector<token_id>& prompt, const turn_result& r) {
  return prompt.size() + r.output.size() - 1;
}

// A prompt that shares nothing with `other`: its first token differs.
std::vector<token_id> unrelated(std::size_t n, std::uint64_t seed, const std::vector<token_id>& other) {
  auto p = test_tokens(n, seed);
  if (p.front() == other.front()) p.front() = static_cast<token_id>((p.front() + 1) % 256);
  return p;
}

cache_options no_set_aside(bool end_anchor = true) {
  cache_options o = small_cache(end_anchor);
  o.session_cache = false;         // no session snapshot answers a turn
  o.prefix_cache = false;          // nor a prefix snapshot
  o.pin_bytes = o.park_bytes = 0;  // nothing set aside when another session comes
  return o;
}

// `first_turns`: the requests before that found nothing held (no_shared_prefix).
void require_miss(const cache_tiers& tiers, miss_reason why, std::size_t tokens, long first_turns = 1) {
  INFO("expected " << to_string(why));
  REQUIRE(tiers.last_miss());
  CHECK(to_string(tiers.last_miss()->reason) == std::string(to_string(why)));
  CHECK(tiers.last_miss()->tokens == tokens);
  const cache_stats s = tiers.stats();
  CHECK(s.miss_reasons[why].requests == 1);
  CHECK(s.miss_reasons[why].tokens == static_cast<long long>(tokens));
  // Counted once, under one reason; besides it only the turns that found nothing held.
  long others = 0;
  for (miss_reason r : all_miss_reasons)
    if (r != why && r != miss_reason::no_shared_prefix) others += s.miss_reasons[r].requests;
  CHECK(others == 0);
  CHECK(s.miss_reasons.no_shared_prefix.requests == first_turns);
}

// A tier that behaves as the disk or the spill would for one prompt: it offers a start at
// `at`, and then restores it, finds it gone, finds it damaged, or declines it by the cost rule.
class scripted_tier final : public fake_tier {
 public:
  enum class act { restore, stale, damaged, decline };
  scripted_tier(std::size_t at, act how) : at_(at), how_(how) {}

  std::optional<resume_offer> offer(tier_lookup& l, std::size_t floor) override {
    if (how_ == act::decline && at_ > floor && l.prompt->size() > at_) {
      l.declined_at = std::max(l.declined_at, at_);
      return std::nullopt;
    }
    return disk_like_offer(l, floor, at_);
  }
  restore_result restore(state_adapter&, const resume_offer&) override {
    return how_ == act::stale ? restore_result::stale : restore_result::failed_checks;
  }

 private:
  std::size_t at_;
  act how_;
};

// A turn of session "a", then its rows dropped (the resident tier cleared: the record keeps
// what was held), then its follow-up: that follow-up shares the turn's rows up to its end anchor.
struct dropped_turn {
  model_config c = test_config("tiny");
  std::unique_ptr<engine> e = make_engine(c);
  std::vector<token_id> a1 = test_tokens(3 * 32 + 7, 300);
  std::size_t rows = 0;
  std::vector<token_id> a2;

  void run(cache_tiers& tiers) {
    const auto r1 = serve_turn(tiers, *e, a1, 6, "a");
    rows = rows_of(a1, r1);
    a2 = next_prompt(a1, r1.output, 9, 301);
    tiers.clear(cache_tier::resident);
  }

  // The follow-up with a tier below the device tiers that offers 3 * 32 and acts `how`: the
  // start falls back to cold, and the miss is `why`, every token of the turn's rows.
  void check(scripted_tier::act how, miss_reason why) {
    cache_tiers tiers(no_set_aside());
    run(tiers);
    // Attached after the first turn: a line it offered then would count as held (held_record.cpp).
    tiers.attach(std::make_unique<scripted_tier>(3 * 32, how));
    const auto r2 = serve_turn(tiers, *e, a2, 0, "a");
    CHECK(r2.offer.source == cache_source::cold);  // the fallback below the failed read
    require_miss(tiers, why, rows);
  }
};

}  // namespace

TEST_CASE("miss reasons: a prompt that shares nothing with what was held is no_shared_prefix, 0 tokens",
          "[tiers][miss]") {
  const model_config c = test_config("tiny");
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  const auto a = test_tokens(100, 310);
  const auto r = serve_turn(tiers, *e, a, 4, "a");
  CHECK(r.offer.source == cache_source::cold);
  require_miss(tiers, miss_reason::no_shared_prefix, 0);  // the first request: nothing held
  serve_turn(tiers, *e, unrelated(120, 311, a), 4, "b");
  CHECK(tiers.stats().miss_reasons.no_shared_prefix.requests == 2);
  CHECK(tiers.stats().miss_reasons.no_shared_prefix.tokens == 0);
}

TEST_CASE(
    "miss reasons: a follow-up whose rows another session overwrote is evicted, the tokens lost counted",
    "[tiers][miss]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(no_set_aside());
  auto e = make_engine(c);
  const auto a1 = test_tokens(3 * g + 7, 320);
  const auto r1 = serve_turn(tiers, *e, a1, 6, "a");
  serve_turn(tiers, *e, unrelated(4 * g + 1, 321, a1), 4, "b");  // overwrites A's rows and anchors
  const auto a2 = next_prompt(a1, r1.output, 9, 322);
  const auto r2 = serve_turn(tiers, *e, a2, 0, "a");
  CHECK(r2.offer.source == cache_source::cold);
  // A's end anchor was the deepest line held (its turn's rows): all of it was prefilled again.
  require_miss(tiers, miss_reason::evicted, rows_of(a1, r1), 2);
}

TEST_CASE("miss reasons: a follow-up whose end anchor the budget refused is budget_refused",
          "[tiers][miss]") {
  const model_config c = test_config("tiny");
  cache_options o = no_set_aside();
  o.resident_bytes = 0;  // no grid anchor and no end anchor fit
  cache_tiers tiers(o);
  auto e = make_engine(c);
  const auto a1 = test_tokens(3 * 32 + 7, 330);
  const auto r1 = serve_turn(tiers, *e, a1, 6, "a");
  REQUIRE(tiers.stats().resident.refusals > 0);
  const auto a2 = next_prompt(a1, r1.output, 9, 331);
  const auto r2 = serve_turn(tiers, *e, a2, 0, "a");
  CHECK(r2.offer.source == cache_source::cold);
  require_miss(tiers, miss_reason::budget_refused, rows_of(a1, r1));
}

TEST_CASE("miss reasons: a session's prompt changed below its end anchor is client_rewrote, from the change",
          "[tiers][miss]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(no_set_aside());
  auto e = make_engine(c);
  const auto a1 = test_tokens(3 * g + 7, 340);
  const auto r1 = serve_turn(tiers, *e, a1, 6, "a");
  auto a2 = next_prompt(a1, r1.output, 9, 341);
  a2[2 * g + 10] = static_cast<token_id>((a2[2 * g + 10] + 1) % 256);  // the client rewrote one token
  const auto r2 = serve_turn(tiers, *e, a2, 0, "a");
  CHECK(r2.offer.at == 2 * g);  // the grid anchor below the change
  require_miss(tiers, miss_reason::client_rewrote, 10);
}

TEST_CASE("miss reasons: another session that parts from what is held between two anchors is between_anchors",
          "[tiers][miss]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(no_set_aside());
  auto e = make_engine(c);
  const auto a1 = test_tokens(3 * g + 7, 350);
  serve_turn(tiers, *e, a1, 6, "a");
  // B shares A's first 2g + 10 tokens (a system prompt and a first message), then its own.
  std::vector<token_id> b = slice(a1, 0, 2 * g + 10);
  const auto tail = unrelated(g, 351, {a1[2 * g + 10]});
  b.insert(b.end(), tail.begin(), tail.end());
  const auto rb = serve_turn(tiers, *e, b, 0, "b");
  CHECK(rb.offer.at == 2 * g);
  require_miss(tiers, miss_reason::between_anchors, 10);
}

TEST_CASE("miss reasons: an offer whose read fails its checks is verification_failed", "[tiers][miss]") {
  dropped_turn().check(scripted_tier::act::damaged, miss_reason::verification_failed);
}

TEST_CASE("miss reasons: an offer gone when its read comes is stale_offer", "[tiers][miss]") {
  dropped_turn().check(scripted_tier::act::stale, miss_reason::stale_offer);
}

TEST_CASE("miss reasons: a deeper start a tier declined by the cost rule is cost_rule", "[tiers][miss]") {
  dropped_turn().check(scripted_tier::act::decline, miss_reason::cost_rule);
}

TEST_CASE("miss reasons: a request that resumes as deep as it shares counts nothing", "[tiers][miss]") {
  const model_config c = test_config("tiny");
  cache_tiers tiers(no_set_aside());
  auto e = make_engine(c);
  const auto a1 = test_tokens(3 * 32 + 7, 360);
  const auto r1 = serve_turn(tiers, *e, a1, 6, "a");
  const auto a2 = next_prompt(a1, r1.output, 9, 361);
  const auto r2 = serve_turn(tiers, *e, a2, 0, "a");
  CHECK(r2.offer.source == cache_source::end);
  CHECK_FALSE(tiers.last_miss());
  long total = 0;
  for (miss_reason r : all_miss_reasons) total += tiers.stats().miss_reasons[r].requests;
  CHECK(total == 1);  // the first turn's no_shared_prefix only
}

TEST_CASE("miss reasons: the record is bounded and a conversation's newer turn replaces its older one",
          "[tiers][miss]") {
  held_record h(3, 1000);
  auto seq = [](std::size_t n, std::uint64_t seed, const std::string& session) {
    held_sequence s;
    s.rows.rows = test_tokens(n, seed);
    s.rows.prompt_len = n;
    s.session = session;
    return s;
  };
  h.add(seq(100, 1, "a"));
  held_sequence longer = seq(100, 1, "a");
  const auto more = test_tokens(50, 2);
  longer.rows.rows.insert(longer.rows.rows.end(), more.begin(), more.end());
  h.add(longer);
  REQUIRE(h.entries().size() == 1);
  CHECK(h.tokens() == 150);
  h.add(seq(400, 3, "b"));
  h.add(seq(400, 4, "c"));
  CHECK(h.entries().size() == 3);
  h.add(seq(400, 5, "d"));  // over 1,000 tokens: the oldest go
  CHECK(h.tokens() <= 1000);
  CHECK(h.entries().back().session == "d");
  CHECK(h.entries().front().session == "c");
  h.add(seq(5000, 6, "e"));  // the newest stays whatever its size
  CHECK(h.entries().size() == 1);
}

TEST_CASE("miss reasons: a line only another engine's disk folder holds is other_fingerprint",
          "[tiers][miss]") {
  const model_config c = test_config("tiny");
  cache_tiers tiers(no_set_aside());
  tiers.attach_disk();
  auto e = make_engine(c);
  const auto p = test_tokens(3 * 32 + 20, 370);
  // The disk actor's reply for p: no offer of its own, another engine's chunks reach 3 * 32.
  tiers.disk()->expect(std::nullopt, 3 * 32);
  const auto r = serve_turn(tiers, *e, p, 4, "a");
  CHECK(r.offer.source == cache_source::cold);
  REQUIRE(tiers.last_miss());
  CHECK(to_string(tiers.last_miss()->reason) == std::string("other_fingerprint"));
  CHECK(tiers.last_miss()->tokens == 3 * 32);
  const cache_stats s = tiers.stats();
  CHECK(s.miss_reasons.other_fingerprint.requests == 1);
  CHECK(s.miss_reasons.other_fingerprint.tokens == 3 * 32);
  CHECK(s.miss_reasons.no_shared_prefix.requests == 0);
}

TEST_CASE("miss_judge: judges only a planned request, records its rows at the finish, marks a refusal",
          "[tiers][miss]") {
  miss_judge j;
  const auto held = test_tokens(40, 971);
  // Nothing planned: begin() does not judge (a request the tiers never planned).
  j.expect("A");
  j.judged(0, held, 16, false);
  CHECK_FALSE(j.last());
  held_sequence s;
  s.rows.rows = held;
  s.rows.prompt_len = held.size();
  s.session = "A";
  j.ended(s);
  j.finished(true);  // a budget refused a copy of its rows during the request
  REQUIRE(j.held().entries().size() == 1);
  CHECK(j.held().entries().front().refused);
  // Planned, then cold on a prompt that extends the held rows: judged, and counted once.
  std::vector<token_id> next = held;
  next.push_back(5);
  next.push_back(6);
  j.expect("B");
  j.planned(0, 0);
  j.judged(0, next, 16, false);
  REQUIRE(j.last());
  CHECK(j.last()->shared == 40);
  CHECK(j.last()->tokens == 40);
  CHECK(j.counts()[j.last()->reason].requests == 1);
  CHECK(j.counts()[j.last()->reason].tokens == 40);
  j.finished(true);  // nothing ended: nothing recorded
  CHECK(j.held().entries().size() == 1);
  // The next request starts unjudged again; a clear of everything empties the record.
  j.expect("C");
  CHECK_FALSE(j.last());
  j.clear_record();
  CHECK(j.held().entries().empty());
}

TEST_CASE("miss_judge: after a restart (nothing recorded) a line a tier below held counts from that line",
          "[tiers][miss]") {
  const auto prompt = test_tokens(100, 981);
  // A disk anchor at 64 whose read failed its checks, then one found gone.
  for (const bool checks : {true, false}) {
    miss_judge j;
    j.expect("A");
    j.planned(0, 0);
    j.read_failed(checks, 64);
    j.judged(0, prompt, 32, false);
    REQUIRE(j.last());
    CHECK(j.last()->reason == (checks ? miss_reason::verification_failed : miss_reason::stale_offer));
    CHECK(j.last()->tokens == 64);
  }
  // One declined by the cost rule.
  miss_judge j;
  j.expect("A");
  j.planned(96, 0);
  j.judged(0, prompt, 32, false);
  REQUIRE(j.last());
  CHECK(j.last()->reason == miss_reason::cost_rule);
  CHECK(j.last()->tokens == 96);
  // Nothing held anywhere: no_shared_prefix at 0 tokens, as before.
  miss_judge none;
  none.expect("A");
  none.planned(0, 0);
  none.judged(0, prompt, 32, false);
  REQUIRE(none.last());
  CHECK(none.last()->reason == miss_reason::no_shared_prefix);
  CHECK(none.last()->tokens == 0);
}
