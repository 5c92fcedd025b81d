// The board with the vision encoder actor on CAF's deterministic scheduler (docs/IMAGES.md, "The
// board"): a request whose image the vision cache does not hold waits in the restoring phase
// while the vision encoder encodes it on its own thread; meanwhile the board goes on with the
// other slot's decode steps (an encode takes seconds on a large tower; invariant 4). The encoder's
// answer comes back as a message, and the request runs with the answer of a board that encoded in
// place.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "actors/board.hpp"
#include "actors/vision_encoder.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/board_images.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("while one slot's image is encoded, another slot's decode steps go on", "[actors][board][images]") {
  const model_config c = test_config("qwen35-tiny", 1024);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  auto tower = tower_for(c);
  const image_prompt p = make_image_prompt(tower->config(), test_tokens(2 * g + 3, 931),
                                           test_tokens(g + 5, 932), image_digest{0x81, 0x82}, 7);
  const image_answer alone = answer_alone(c, p, 8);

  caf_fixture f;
  auto seen = std::make_shared<recorded>();
  caf::actor sink = f.spawn(recorder, seen);
  vision_encoder_actor encoder = f.spawn(anchorage::vision_encoder);
  board_options bo;
  bo.decode_block = 1;
  bo.cache = small_runner_options().cache;
  bo.slots = {shared_engine(c)};
  bo.vision = tower;
  bo.vision_encoder = encoder;
  board_actor b = f.spawn(board, shared_engine(c), bo, caf::actor_cast<done_receiver>(sink));
  f.sched->run();
  auto& st = caf_fixture::state_of<board_state>(b);
  auto job = [&](board_job j) {
    j.sink = caf::actor_cast<sink_actor>(sink);
    return j;
  };

  // C decodes on one slot.
  caf::anon_send(b, run_atom::value, job(job_of(test_tokens(g + 3, 933), 40, "c1", "C")));
  for (int i = 0; i < 4; ++i) {
    REQUIRE(f.sched->prioritize(b));
    f.sched->run_once();
  }
  const std::size_t c_slot = *st.slots->slot_of("c1");
  // A's request with its image on the other slot: the encode goes to the vision encoder.
  caf::anon_send(b, run_atom::value, job(image_job(p, 8, "a1", "A")));
  f.run_only(b);  // the board alone: it handles the run, then C's steps, until C ends
  f.run_only(sink);
  const std::size_t a_slot = *st.slots->slot_of("a1");
  REQUIRE(a_slot != c_slot);
  CHECK(st.slots->runner(a_slot).current_phase() == board_runner::phase::restoring);
  // C decoded to its end while A's image waited at the encoder: the board encoded nothing.
  REQUIRE(seen->ledger.size() == 1);
  CHECK(seen->ledger[0].id == "c1");
  CHECK(seen->ledger[0].output_tokens == 40);
  CHECK(caf_fixture::state_of<vision_encoder_state>(encoder).jobs == 0);
  CHECK(tower->stats().encodes == 0);

  // The encoder encodes; the board keeps its rows and A runs.
  f.run_only(encoder);
  CHECK(caf_fixture::state_of<vision_encoder_state>(encoder).images == 1);
  f.sched->run();
  REQUIRE(seen->ledger.size() == 2);
  CHECK(seen->ledger[1].id == "a1");
  CHECK(seen->ledger[1].source == cache_source::cold);
  std::string got;
  for (const auto& ev : seen->events)
    if (ev.id == "a1" && ev.what == stream_event::kind::finished) got = ev.output.content;
  CHECK(got == alone.run.events.back().output.content);
  CHECK(same_state(take_snapshot(st.slots->runner(a_slot).slot0().cache_state()), alone.state));
  CHECK(tower->stats().encodes == 1);
}
