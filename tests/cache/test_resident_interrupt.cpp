// The resident prefix under interruption: a guest's stash, the parked session
// swapped back and forth, and the pinned head. Each state is compared
// byte for byte with an engine that only ever ran that one conversation.
#include <catch2/catch.hpp>

#include "tests/support/cache_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// One conversation on an engine of its own, never interrupted, never restored: the reference.
struct reference {
  std::unique_ptr<engine> e;
  std::vector<token_id> rows;  // what its rows hold
  explicit reference(const model_config& c) : e(make_engine(c)) {}
  // Prefills what `prompt` adds to the rows, then decodes `max_tokens` greedy tokens.
  std::vector<token_id> turn(const std::vector<token_id>& prompt, int max_tokens) {
    REQUIRE(prompt.size() > rows.size());
    REQUIRE(std::equal(rows.begin(), rows.end(), prompt.begin()));
    e->prefill(slice(prompt, e->length(), prompt.size()));
    generation_request g;
    g.max_tokens = max_tokens;
    auto out = generator(*e, g).run();
    rows = slice(prompt, 0, prompt.size());
    rows.insert(rows.end(), out.begin(), out.end() - 1);  // the last token is pending
    return out;
  }
};

void require_same_as(engine& e, engine& ref) {
  require_same_state(take_snapshot(e.cache_state()), take_snapshot(ref.cache_state()), ref.layout());
  CHECK(same_bytes(e.last_logits(), ref.last_logits()));
}

}  // namespace

TEST_CASE("a guest between two turns is stashed and the conversation resumes at its end",
          "[resident][guest]") {
  const model_config c = test_config("tiny");
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  reference ref(c);
  const auto a1 = test_tokens(2000, 200);
  const auto r1 = serve_turn(tiers, *e, a1, 8, "a");
  CHECK(r1.output == ref.turn(a1, 8));
  // A title request: 400 tokens, another system prompt, a few output tokens.
  const auto guest = test_tokens(400, 201);
  request_info info;
  info.session_key = "title";
  info.max_tokens = 8;
  const auto o = tiers.plan(guest, info);
  REQUIRE(o.via == cache_via::stash);
  e->reset();
  tiers.begin(o, e->cache_state());
  // The stash holds what the guest can write (its prompt, its output, two margins of 512), not
  // the stash budget and not every resident row.
  CHECK(tiers.budget().used(budget_pool::stash) == row_copy::bytes_for(e->layout(), 0, 400 + 8 + 1024));
  CHECK(tiers.budget().used(budget_pool::stash) < tiers.budget().limit(budget_pool::stash));
  e->prefill(guest);
  generation_request g;
  g.max_tokens = 8;
  generator(*e, g).run();
  tiers.finish(e->cache_state());
  CHECK(tiers.budget().used(budget_pool::stash) == 0);
  CHECK(!tiers.resident().anchors().positions().empty());
  // A's next turn: from the end anchor, as if the guest had never run.
  const auto a2 = next_prompt(a1, r1.output, 37, 202);
  const auto r2 = serve_turn(tiers, *e, a2, 8, "a");
  CHECK(r2.offer.source == cache_source::end);
  CHECK(r2.prefilled == 38);
  CHECK(r2.output == ref.turn(a2, 8));
  require_same_as(*e, *ref.e);
}

TEST_CASE("a refused stash cuts the resident rows at the guest's start", "[resident][guest]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_options o = small_cache(true);
  o.stash_bytes = 0;
  o.session_cache = o.prefix_cache = false;  // only the resident prefix can answer
  o.park_bytes = GENERATE(std::size_t{0}, std::size_t{64} << 20);
  INFO("park budget " << o.park_bytes);
  cache_tiers tiers(o);
  auto e = make_engine(c);
  const auto a1 = test_tokens(1500, 210);
  const auto r1 = serve_turn(tiers, *e, a1, 8, "a");
  const auto rg = serve_turn(tiers, *e, test_tokens(300, 211), 4, "title");
  CHECK(rg.via == cache_via::none);
  CHECK(nlohmann::json(tiers.stats())["resident"]["stash_refusals"] == 1);
  // An ordinary request of another session: with room, it parked the conversation.
  CHECK((tiers.resident().saved(cache_via::park) != nullptr) == (o.park_bytes > 0));
  const auto a2 = next_prompt(a1, r1.output, 20, 212);
  const auto r2 = serve_turn(tiers, *e, a2, 0, "a");
  if (o.park_bytes > 0) {
    CHECK(r2.via == cache_via::park);
    CHECK(r2.offer.source == cache_source::end);
  } else {
    CHECK(r2.offer.source == cache_source::cold);  // the guest started at 0 and cut every row
    auto cold = make_engine(c);
    cold->prefill(a2);
    require_same_as(*e, *cold);
  }
  (void)g;
}

TEST_CASE("sessions used in turn swap through the park bit for bit", "[resident][park]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  reference ref_a(c), ref_b(c);
  // A and B share a head (a system prompt of 3 lines) and nothing after it.
  const auto head = test_tokens(3 * g, 220);
  std::vector<token_id> pa = concat(head, test_tokens(2 * g + 7, 221));
  std::vector<token_id> pb = concat(head, test_tokens(3 * g + 3, 222));
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    const auto ra = serve_turn(tiers, *e, pa, 6, "a");
    CHECK(ra.output == ref_a.turn(pa, 6));
    require_same_as(*e, *ref_a.e);
    if (round > 0) {
      CHECK(ra.via == cache_via::park);
      CHECK(ra.offer.source == cache_source::end);  // A's end anchor came back with its rows
      CHECK(ra.prefilled <= g);                     // at most one grid chunk re-read
    }
    pa = next_prompt(pa, ra.output, 11 + static_cast<std::size_t>(round), 230 + round);
    const auto rb = serve_turn(tiers, *e, pb, 6, "b");
    CHECK(rb.output == ref_b.turn(pb, 6));
    require_same_as(*e, *ref_b.e);
    if (round > 0) CHECK(rb.via == cache_via::park);
    if (round == 0) CHECK(rb.offer.at == 3 * g);  // the shared head, from A's anchors
    pb = next_prompt(pb, rb.output, 9 + static_cast<std::size_t>(round), 240 + round);
  }
  CHECK(nlohmann::json(tiers.stats())["resident"]["park_hits"].get<long>() >= 4);
}

TEST_CASE(
    "a parked session keeps older anchors spread below its newest, for a client that rewrites below them",
    "[resident][park]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_options o = small_cache(true);
  o.session_cache = o.prefix_cache = false;  // only the resident prefix and its park can answer
  cache_tiers tiers(o);
  auto e = make_engine(c);
  // A's conversation, anchored at every line from g to 12 g.
  const auto a1 = test_tokens(12 * g + 7, 260);
  serve_turn(tiers, *e, a1, 4, "a");
  REQUIRE(tiers.resident().anchors().positions().size() >= 12);
  // Another session parks it.
  serve_turn(tiers, *e, test_tokens(13 * g, 261), 4, "b");  // as long: no guest
  const saved_prompt* parked = tiers.resident().saved(cache_via::park);
  REQUIRE(parked != nullptr);
  // Its newest 4 (9 g to 12 g) and 4 spread over the 8 older ones.
  std::vector<std::size_t> kept;
  for (const auto& [pos, copy] : parked->anchors) kept.push_back(pos);
  CHECK(kept == std::vector<std::size_t>{2 * g, 4 * g, 6 * g, 8 * g, 9 * g, 10 * g, 11 * g, 12 * g});
  // A's next turn rewrote its prompt at 5 g + 9, below every one of the newest 4 anchors: it
  // resumes from the park at 4 g, a cold prefill's bits.
  const auto back = concat(slice(a1, 0, 5 * g + 9), test_tokens(40, 262));
  const auto rb = serve_turn(tiers, *e, back, 0, "a");
  CHECK(rb.via == cache_via::park);
  CHECK(rb.offer.source == cache_source::resident);
  CHECK(rb.offer.at == 4 * g);
  auto cold = make_engine(c);
  cold->prefill(back);
  require_same_as(*e, *cold);
}

TEST_CASE("a pinned head comes back for the same session after a replacing request", "[resident][pin]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  const auto head = test_tokens(g + 5, 250);
  const auto conversation = concat(head, test_tokens(6 * g, 251));
  serve_turn(tiers, *e, conversation, 4, "a");
  // The same session's compaction request: the head, then something else entirely.
  const auto compaction = concat(head, test_tokens(3 * g, 252));
  const auto rc = serve_turn(tiers, *e, compaction, 4, "a");
  CHECK(rc.offer.at == g);
  REQUIRE(tiers.resident().saved(cache_via::pin) != nullptr);
  // Back to the conversation (a retry, a branch): its head is copied back and resumes there.
  const auto back = concat(slice(conversation, 0, 5 * g + 9), test_tokens(20, 253));
  const auto rb = serve_turn(tiers, *e, back, 0, "a");
  CHECK(rb.via == cache_via::pin);
  CHECK(rb.offer.source == cache_source::resident);
  CHECK(rb.offer.at == 5 * g);
  auto cold = make_engine(c);
  cold->prefill(back);
  require_same_as(*e, *cold);
}
