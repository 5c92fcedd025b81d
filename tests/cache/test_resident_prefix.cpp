// The resident prefix (grid anchors, end anchor, taint) and the lookup order through
// cache_tiers, on the tiny models, against cold prefills and against an engine that kept its rows.
#include <catch2/catch.hpp>

#include "tests/support/cache_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A cold prefill of `prompt` in a fresh engine, compared with `e` byte for byte.
void require_equals_cold(const model_config& c, engine& e, const std::vector<token_id>& prompt) {
  auto cold = make_engine(c);
  cold->prefill(prompt);
  REQUIRE(e.length() == prompt.size());
  CHECK(same_bytes(e.last_logits(), cold->last_logits()));
  if (c.mtp) CHECK(same_bytes(e.last_draft_logits(), cold->last_draft_logits()));
  require_same_state(take_snapshot(e.cache_state()), take_snapshot(cold->cache_state()), cold->layout());
}

}  // namespace

TEST_CASE("grid anchors resume every turn of a growing conversation bit for bit", "[resident][exact]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp", "qwen35moe-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(/*end_anchor=*/false));
  auto e = make_engine(c);

  std::vector<token_id> prompt = test_tokens(3 * g + 5, 11);
  for (int turn = 0; turn < 4; ++turn) {
    INFO("turn " << turn);
    const std::size_t previous = turn == 0 ? 0 : tiers.resident().tokens().size();
    const auto r = serve_turn(tiers, *e, prompt, 0);
    if (turn == 0) {
      CHECK(r.offer.source == cache_source::cold);
    } else {
      // The previous prompt's rows up to its last line are exact; the short chunk above it is not.
      CHECK(r.offer.source == cache_source::resident);
      CHECK(r.offer.at == previous / g * g);
      CHECK(r.prefilled == prompt.size() - r.offer.at);
    }
    require_equals_cold(c, *e, prompt);
    // Every anchor sits on a line at or below the taint.
    for (const auto& [pos, stamp] : tiers.resident().anchors().positions()) {
      CHECK(pos % g == 0);
      CHECK(pos <= tiers.resident().taint());
    }
    const auto more = test_tokens(g + 7 + static_cast<std::size_t>(turn) * 9, 20 + turn);
    prompt.insert(prompt.end(), more.begin(), more.end());
  }
}

TEST_CASE("a request that parts off the grid resumes at the line below, never at the part",
          "[resident][exact]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(false));
  auto e = make_engine(c);
  const auto first = test_tokens(4 * g + 3, 5);
  serve_turn(tiers, *e, first, 0);
  // Shares 2 lines and 10 tokens, then differs.
  auto second = slice(first, 0, 2 * g + 10);
  const auto tail = test_tokens(g, 99);
  second.insert(second.end(), tail.begin(), tail.end());
  const auto r = serve_turn(tiers, *e, second, 0);
  CHECK(r.offer.source == cache_source::resident);
  CHECK(r.offer.at == 2 * g);
  require_equals_cold(c, *e, second);
  // The anchors of the first prompt above the part are gone.
  for (const auto& [pos, stamp] : tiers.resident().anchors().positions()) CHECK(pos <= second.size());
}

TEST_CASE("a prompt equal to the resident one still forwards its last token", "[resident]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(false));
  auto e = make_engine(c);
  const auto prompt = test_tokens(3 * g, 8);  // ends on a line
  serve_turn(tiers, *e, prompt, 0);
  const auto r = serve_turn(tiers, *e, prompt, 0);
  CHECK(r.offer.source == cache_source::resident);
  CHECK(r.offer.at == 2 * g);  // the anchor at 3g would leave nothing to forward
  require_equals_cold(c, *e, prompt);
}

TEST_CASE("the end anchor resumes the next turn where the answer ended", "[resident][end]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp", "qwen35moe-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  // The reference keeps its rows in place and never restores anything.
  auto kept = make_engine(c);

  std::vector<token_id> prompt = test_tokens(2 * g + 9, 31);
  kept->prefill(prompt);
  for (int turn = 0; turn < 3; ++turn) {
    INFO("turn " << turn);
    const auto r = serve_turn(tiers, *e, prompt, 12);
    generation_request gr;
    gr.max_tokens = 12;
    const auto ref = generator(*kept, gr).run();
    CHECK(r.output == ref);
    require_same_state(take_snapshot(e->cache_state()), take_snapshot(kept->cache_state()), kept->layout());
    if (turn > 0) {
      CHECK(r.offer.source == cache_source::end);
      CHECK(r.prefilled == 1 + 5 + static_cast<std::size_t>(turn));  // the pending token and the new ones
    }
    const std::size_t end = e->length();
    REQUIRE(tiers.resident().has_end_anchor());
    CHECK(tiers.resident().end_position() == end);
    // Decode rows are above the taint: no grid anchor there.
    CHECK(tiers.resident().taint() <= prompt.size());
    const auto next = next_prompt(prompt, r.output, 5 + static_cast<std::size_t>(turn) + 1, 40 + turn);
    kept->prefill(slice(next, end, next.size()));
    prompt = next;
  }
  // The last turn's prefill started off the grid: still no anchor above the taint.
  for (const auto& [pos, stamp] : tiers.resident().anchors().positions())
    CHECK(pos <= tiers.resident().taint());
}

TEST_CASE("an end anchor restored into a fresh engine equals the engine that kept its rows",
          "[resident][end]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp", "qwen35moe-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  cache_tiers tiers(small_cache(true));
  auto a = make_engine(c);
  const auto prompt = test_tokens(c.grid + 17, 3);
  const auto r = serve_turn(tiers, *a, prompt, 20);
  const std::size_t end = a->length();
  const auto next = next_prompt(prompt, r.output, 9, 4);

  auto offer = tiers.plan(next);
  REQUIRE(offer.source == cache_source::end);
  REQUIRE(offer.at == end);
  // A fresh engine with the rows copied in (the rows are what stays in place) and the end
  // anchor's sections restored.
  auto b = make_engine(c);
  const snapshot rows = take_snapshot(a->cache_state());
  restore_snapshot(b->cache_state(), rows);
  for (std::size_t i = 0; i < b->layout().sections.size(); ++i) {
    std::vector<unsigned char> zero(b->layout().sections[i].bytes, 0);
    b->cache_state().copy_section_in(i, zero.data());  // nothing of a's sections survives
  }
  tiers.restore(b->cache_state(), offer);
  require_same_state(take_snapshot(b->cache_state()), rows, a->layout());

  a->prefill(slice(next, end, next.size()));
  b->prefill(slice(next, end, next.size()));
  CHECK(same_bytes(a->last_logits(), b->last_logits()));
  generation_request gr;
  gr.max_tokens = 16;
  CHECK(generator(*a, gr).run() == generator(*b, gr).run());
  require_same_state(take_snapshot(a->cache_state()), take_snapshot(b->cache_state()), a->layout());
}

TEST_CASE("a client that changed the answer resumes at the last exact line", "[resident][end]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  const auto prompt = test_tokens(3 * g + 4, 12);
  const auto r = serve_turn(tiers, *e, prompt, 10);
  auto edited = r.output;
  edited[3] = (edited[3] + 1) % 256;
  const auto next = next_prompt(prompt, edited, 20, 13);
  const auto r2 = serve_turn(tiers, *e, next, 0);
  CHECK(r2.offer.source == cache_source::resident);
  CHECK(r2.offer.at == 3 * g);
  require_equals_cold(c, *e, next);
}

TEST_CASE("the state store answers when the resident prefix cannot, exactly", "[resident][store][exact]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp", "qwen35moe-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  // A shared head (a system prompt) then one user's question.
  const auto head = test_tokens(4 * g + 5, 50);
  auto first = head;
  const auto q1 = test_tokens(15, 51);
  first.insert(first.end(), q1.begin(), q1.end());
  serve_turn(tiers, *e, first, 0);
  // The cold prefill left a prefix snapshot at its longest line.
  CHECK(tiers.store().entries() >= 1);
  // Another session replaces the rows entirely, then the first head comes back.
  serve_turn(tiers, *e, test_tokens(5 * g, 60), 0);
  tiers.clear(cache_tier::resident);
  auto second = head;
  const auto q2 = test_tokens(22, 52);
  second.insert(second.end(), q2.begin(), q2.end());
  const auto r = serve_turn(tiers, *e, second, 0);
  CHECK(r.offer.source == cache_source::store);
  CHECK(r.offer.at == 4 * g);
  require_equals_cold(c, *e, second);
}

TEST_CASE("a deeper tier is taken only when it starts later", "[resident][store]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(false));
  auto e = make_engine(c);
  const auto prompt = test_tokens(4 * g + 2, 70);
  serve_turn(tiers, *e, prompt, 0);  // leaves anchors up to 4g and a snapshot at 4g
  REQUIRE(tiers.store().entries() >= 1);
  auto longer = prompt;
  const auto more = test_tokens(g, 71);
  longer.insert(longer.end(), more.begin(), more.end());
  // Both the resident prefix and the store start at 4g: the resident prefix wins the tie.
  const auto r = serve_turn(tiers, *e, longer, 0);
  CHECK(r.offer.source == cache_source::resident);
  CHECK(r.offer.at == 4 * g);
}

TEST_CASE("anchors stay within their budget and the newest four survive", "[resident][budget]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  auto e = make_engine(c);
  const std::size_t anchor = state_copy::bytes_for(e->layout(), 0);
  cache_options o = small_cache(GENERATE(false, true));
  o.resident_bytes = 6 * anchor + anchor / 2;
  INFO("end anchor " << o.end_anchor);
  cache_tiers tiers(o);
  const auto prompt = test_tokens(20 * g + 3, 80);
  const auto offer = tiers.plan(prompt);
  e->reset();
  tiers.begin(offer, e->cache_state());
  e->begin_prefill(prompt);
  while (e->prefill_remaining() > 0) {
    e->prefill_step();
    tiers.after_prefill_step(e->cache_state(), e->where());
    CHECK(tiers.budget().used(budget_pool::resident) <= o.resident_bytes);
  }
  const auto pos = tiers.resident().anchors().positions();
  CHECK(pos.size() == 6);
  for (std::size_t line = 17; line <= 20; ++line) CHECK(pos.count(line * g) == 1);
  CHECK(tiers.resident().anchors().evictions() == 14);
  generation_request gr;
  gr.max_tokens = 4;
  std::vector<token_id> out = generator(*e, gr).run();
  generation_outcome go;
  go.served = &prompt;
  go.output = &out;
  go.rows = e->length();
  tiers.end_generation(e->cache_state(), e->where(), build_end_record(go));
  CHECK(tiers.budget().used(budget_pool::resident) <= o.resident_bytes);
  CHECK(tiers.resident().has_end_anchor() == o.end_anchor);
  for (std::size_t line = 17; line <= 20; ++line)
    CHECK(tiers.resident().anchors().positions().count(line * g) == 1);
}

TEST_CASE("with the cache off every request is cold and nothing is kept", "[resident]") {
  const model_config c = test_config("tiny");
  cache_options o = small_cache(true);
  o.enabled = false;
  cache_tiers tiers(o);
  auto e = make_engine(c);
  const auto prompt = test_tokens(3 * c.grid + 1, 90);
  serve_turn(tiers, *e, prompt, 5);
  const auto r = serve_turn(tiers, *e, prompt, 5);
  CHECK(r.offer.source == cache_source::cold);
  CHECK(tiers.resident().anchors().size() == 0);
  CHECK(!tiers.resident().has_end_anchor());
  CHECK(tiers.store().entries() == 0);
}

TEST_CASE("store snapshots resume every turn of a growing conversation bit for bit",
          "[resident][store][exact]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_options o = small_cache(false);
  o.session_cache = false;  // only the prefix snapshots: every resume below is a grid state
  cache_tiers tiers(o);
  auto e = make_engine(c);
  std::vector<token_id> prompt = test_tokens(2 * g + 11, 120);
  for (int turn = 0; turn < 4; ++turn) {
    INFO("turn " << turn);
    const std::size_t previous = turn == 0 ? 0 : tiers.resident().tokens().size();
    tiers.clear(cache_tier::resident);  // the rows are gone (another session took them): the store answers
    const auto r = serve_turn(tiers, *e, prompt, 0);
    if (turn == 0) {
      CHECK(r.offer.source == cache_source::cold);
    } else {
      CHECK(r.offer.source == cache_source::store);
      CHECK(r.offer.at == previous / g * g);
    }
    require_equals_cold(c, *e, prompt);
    const auto more = test_tokens(g + 3 + static_cast<std::size_t>(turn) * 5, 130 + turn);
    prompt.insert(prompt.end(), more.begin(), more.end());
  }
  CHECK(tiers.budget().used(budget_pool::store) <= o.store_bytes);
}

TEST_CASE("an unrelated request between two turns takes the end anchor with its rows",
          "[resident][end][exact]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_options o = small_cache(true);
  o.session_cache = false;         // A's session snapshot would answer (a session resume, not exact)
  o.pin_bytes = o.park_bytes = 0;  // nothing set aside: the store answers
  cache_tiers tiers(o);
  auto e = make_engine(c);
  const auto a1 = test_tokens(3 * g + 7, 140);
  const auto r1 = serve_turn(tiers, *e, a1, 10);
  // B shares nothing with A and is long enough to overwrite A's answer rows.
  serve_turn(tiers, *e, test_tokens(4 * g + 1, 141), 4);
  const auto a2 = next_prompt(a1, r1.output, 9, 142);
  const auto r2 = serve_turn(tiers, *e, a2, 0);
  CHECK(r2.offer.source == cache_source::store);  // A's prefix snapshot at 3g
  CHECK(r2.offer.at == 3 * g);
  require_equals_cold(c, *e, a2);
}

TEST_CASE("a store restore over another session's rows keeps none of its anchors",
          "[resident][store][exact]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_options o = small_cache(true);
  o.session_cache = false;
  o.pin_bytes = o.park_bytes = 0;  // nothing set aside: the store answers
  cache_tiers tiers(o);
  auto e = make_engine(c);
  const auto a = test_tokens(4 * g + 5, 150);
  serve_turn(tiers, *e, a, 0);  // cold: a prefix snapshot at 4g
  const auto b = test_tokens(5 * g + 3, 151);
  serve_turn(tiers, *e, b, 0);  // replaces the rows; B's anchors up to 5g
  REQUIRE(tiers.resident().anchors().size() >= 5);
  auto a_next = slice(a, 0, 4 * g + 2);
  const auto tail = test_tokens(g + 4, 152);
  a_next.insert(a_next.end(), tail.begin(), tail.end());
  const auto r = serve_turn(tiers, *e, a_next, 0);
  CHECK(r.offer.source == cache_source::store);
  CHECK(r.offer.at == 4 * g);
  require_equals_cold(c, *e, a_next);
  // B comes back: none of its anchors may be used over A's rows.
  auto b_next = b;
  const auto more = test_tokens(g, 153);
  b_next.insert(b_next.end(), more.begin(), more.end());
  const auto rb = serve_turn(tiers, *e, b_next, 0);
  CHECK(rb.offer.source != cache_source::resident);
  require_equals_cold(c, *e, b_next);
}

TEST_CASE("no anchor is taken where an end resume prefilled across a line", "[resident][end][exact]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  const auto p1 = test_tokens(2 * g + 9, 160);
  const auto r1 = serve_turn(tiers, *e, p1, 12);
  const auto p2 = next_prompt(p1, r1.output, 2 * g + 3, 161);  // crosses two lines from the end
  const auto r2 = serve_turn(tiers, *e, p2, 0);
  REQUIRE(r2.offer.source == cache_source::end);
  for (const auto& [pos, stamp] : tiers.resident().anchors().positions()) CHECK(pos <= p1.size());
  // A prompt that parts well past those lines resumes at the end anchor (its rows are intact),
  // never at a line the off-grid prefill passed.
  auto p3 = slice(p2, 0, r2.offer.at + g + 5);
  const auto other = test_tokens(g, 162);
  p3.insert(p3.end(), other.begin(), other.end());
  const auto r3 = serve_turn(tiers, *e, p3, 0);
  CHECK(r3.offer.source == cache_source::end);
  CHECK(r3.offer.at == r2.offer.at);
}

TEST_CASE("a request cancelled inside its prefill does not make the next one cold", "[resident]") {
  const model_config c = test_config("tiny");
  const std::size_t g = static_cast<std::size_t>(c.grid);
  cache_tiers tiers(small_cache(true));
  auto e = make_engine(c);
  const auto p = test_tokens(5 * g + 3, 170);
  serve_turn(tiers, *e, p, 0);
  // The same conversation again, abandoned after one chunk (the client went away).
  auto longer = p;
  const auto more = test_tokens(3 * g, 171);
  longer.insert(longer.end(), more.begin(), more.end());
  auto o = tiers.plan(longer);
  tiers.restore(e->cache_state(), o);
  tiers.begin(o, e->cache_state());
  e->begin_prefill(slice(longer, e->length(), longer.size()));
  e->prefill_step();
  tiers.after_prefill_step(e->cache_state(), e->where());
  e->abandon_prefill();  // what the board does before the next request
  const auto r = serve_turn(tiers, *e, longer, 0);
  CHECK(r.offer.source == cache_source::resident);
  CHECK(r.offer.at >= 5 * g);
  require_equals_cold(c, *e, longer);
}
