// Two images whose digests agree in their low 64 bits never share a state (issue 27, docs/IMAGES.md
// "Keys"). XXH3-128 over the patches cannot be made to collide, so the digests are forced here:
// image A has (lo, hi_a), image B (lo, hi_b), each with its own patches, and their rows' key ids
// come from image_row_ids as the prompt renderer makes them. A component that kept only 64 of the
// 128 bits (the rows' ids, the vision cache's key, a tier's lookup) would answer B with A's state
// or A's embeddings; each check below compares B's answer with a board that never saw A.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/board_images.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

struct collision {
  model_config c = test_config("qwen35-tiny", 1024);
  std::size_t g = static_cast<std::size_t>(c.grid);
  vision_config v = tiny_vision_config(c.d_model);
  std::vector<token_id> head = test_tokens(3 * g + 5, 771), tail = test_tokens(2 * g + 7, 772);
  image_digest da{0x0123456789abcdefULL, 0x1111111111111111ULL};
  image_digest db{0x0123456789abcdefULL, 0x2222222222222222ULL};  // the same low 64 bits
  image_prompt a = make_image_prompt(v, head, tail, da, 1), b = make_image_prompt(v, head, tail, db, 2);
  static constexpr long max_tokens = 8;
  image_answer a_alone = answer_alone(c, a, max_tokens), b_alone = answer_alone(c, b, max_tokens);

  collision() {
    // The rows differ at the image's first row (every one of rows 0..3 depends on all 128 bits),
    // and the two states differ (the random model's greedy words may not), so a restore of A's
    // state or rows for B would show.
    REQUIRE(a.tokens.size() == b.tokens.size());
    REQUIRE(a.tokens[head.size()] != b.tokens[head.size()]);
    REQUIRE_FALSE(same_state(a_alone.state, b_alone.state));
  }
  long image_start() const { return static_cast<long>(head.size()); }
  long image_end() const { return static_cast<long>(a.image.end()); }
};

}  // namespace

TEST_CASE("image collision: digests equal in their low 64 bits share no resident state and no encoding",
          "[tiers][runner][images]") {
  collision k;
  auto tower = tower_for(k.c);
  board_runner r(make_engine(k.c), with_tower(small_runner_options(), tower));
  const image_answer a1 = answer_of(r, image_job(k.a, k.max_tokens, "a1", "s"));
  check_answers_as(a1, k.a_alone);

  // A's next turn (its prompt and answer, then more), and the same turn with B's image in place
  // of A's: the end anchor holds A's conversation.
  image_prompt a_next = k.a, b_next = k.b;
  a_next.tokens = r.tiers().resident().tokens();
  const auto more = test_tokens(20, 773);
  a_next.tokens.insert(a_next.tokens.end(), more.begin(), more.end());
  b_next.tokens = a_next.tokens;
  std::copy(k.b.tokens.begin() + k.image_start(), k.b.tokens.begin() + k.image_end(),
            b_next.tokens.begin() + k.image_start());
  const image_answer a_next_alone = answer_alone(k.c, a_next, k.max_tokens),
                     b_next_alone = answer_alone(k.c, b_next, k.max_tokens);
  REQUIRE_FALSE(same_state(a_next_alone.state, b_next_alone.state));

  const image_answer b2 = answer_of(r, image_job(b_next, k.max_tokens, "b2", "s"));
  INFO("B resumed at " << b2.run.done->resumed_at << " from " << to_string(b2.run.done->source));
  CHECK(b2.run.done->resumed_at > 0);  // the head is shared
  CHECK(b2.run.done->resumed_at <= k.image_start());
  check_answers_as(b2, b_next_alone);
  // B's rows were encoded, not taken from A's cache entry.
  CHECK(tower->stats().encodes == 2);
  CHECK(tower->stats().hits == 0);

  // And A's turn after it, with B's rows resident, comes back past its image from what the device
  // tiers kept of A (so B, had its key been A's, could have been answered from it there too). A
  // session resume: its rows above A's prompt are A's decoded ones, so no bit check against cold.
  const image_answer a2 = answer_of(r, image_job(a_next, k.max_tokens, "a2", "s"));
  INFO("A resumed at " << a2.run.done->resumed_at << " from " << to_string(a2.run.done->source));
  CHECK(a2.run.done->source != cache_source::cold);
  CHECK(a2.run.done->resumed_at > k.image_end());
  CHECK(tower->stats().encodes == 2);
}

TEST_CASE("image collision: digests equal in their low 64 bits share no disk anchor",
          "[tiers][runner][images][disk]") {
  collision k;
  temp_dir dir("anchorage-image-collision");
  uring_env env;  // outlives every runner below
  const auto [o, d] = with_test_disk(dir.str());
  {
    // A served twice, the device tiers emptied between: its lines above the image get anchors.
    board_runner w(make_engine(k.c), with_tower(o, tower_for(k.c)));
    disk_driver wd(env, w.slot0().layout(), d);
    run_to_end(w, w.start(image_job(k.a, 2, "w1", "w")), &wd);
    w.clear(cache_tier::resident);
    w.clear(cache_tier::store);
    run_to_end(w, w.start(image_job(k.a, 2, "w2", "w")), &wd);
    REQUIRE(wd.service->store().longest_durable_prefix_tokens() > static_cast<std::size_t>(k.image_end()));
  }
  {
    // A restart: B finds no anchor past its image start.
    board_runner r(make_engine(k.c), with_tower(o, tower_for(k.c)));
    disk_driver rd(env, r.slot0().layout(), d);
    const image_answer b = answer_of(r, image_job(k.b, k.max_tokens, "b", "b"), &rd);
    INFO("B resumed at " << b.run.done->resumed_at << " from " << to_string(b.run.done->source));
    CHECK(b.run.done->resumed_at <= k.image_start());
    check_answers_as(b, k.b_alone);
  }
  {
    // The same disk answers A past its image (so the check above could fail).
    board_runner r(make_engine(k.c), with_tower(o, tower_for(k.c)));
    disk_driver rd(env, r.slot0().layout(), d);
    const image_answer a = answer_of(r, image_job(k.a, k.max_tokens, "a", "a"), &rd);
    CHECK(a.run.done->source == cache_source::disk);
    CHECK(a.run.done->resumed_at > k.image_end());
    check_answers_as(a, k.a_alone);
  }
}
