// A request's images are encoded off the board's thread (docs/IMAGES.md, "The board"): the run
// asks for the encode (board_events::vision_encode) and waits in the restoring phase, the other
// slot's decode steps go on meanwhile, and the encoder's answer starts the run with the answer
// and the state of a board that encoded in place. Only the images the prefill forwards go: a
// follow-up that resumes after its image encodes nothing, and a vision cache too small to keep
// the rows does not send the run back to the encoder.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "runtime/vision/vision_encode.hpp"
#include "tests/support/board_images.hpp"
#include "tests/support/spill_board.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// The text of `id`'s deltas in `evs`.
std::string text_of(const std::vector<stream_event>& evs, const std::string& id) {
  std::string t;
  for (const auto& ev : evs)
    if (ev.id == id)
      for (const auto& d : ev.deltas) t += d.text;
  return t;
}

}  // namespace

TEST_CASE("an image is encoded off the board's thread: the other slot decodes while its run waits",
          "[board][images]") {
  const model_config c = test_config("qwen35-tiny", 1024);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  auto tower = tower_for(c);
  const vision_config v = tower->config();
  const image_prompt p =
      make_image_prompt(v, test_tokens(2 * g + 5, 901), test_tokens(g + 7, 902), image_digest{0x51, 0x52}, 3);
  const image_answer alone = answer_alone(c, p, 8);

  board_runner_options o = with_tower(small_runner_options(), tower);
  o.decode_block = 1;
  slot_board s({shared_engine(c), shared_engine(c)}, o);
  std::vector<stream_event> seen;
  auto keep = [&](slot_events& e) {
    for (auto& ev : e.events.events) seen.push_back(ev);
  };

  // C decodes on one slot.
  slot_events first = s.start(job_of(test_tokens(g + 3, 903), 40, "c1", "C"));
  keep(first);
  for (int i = 0; i < 4; ++i)
    for (auto& e : s.step()) keep(e);
  const std::size_t c_slot = *s.slot_of("c1");

  // The image's request on the other slot asks for its encode and waits.
  slot_events a = s.start(image_job(p, 8, "a1", "A"));
  const std::size_t a_slot = a.slot;
  REQUIRE(a_slot != c_slot);
  REQUIRE(a.events.vision_encode);
  vision_encode_ptr job = std::move(a.events.vision_encode);
  REQUIRE(job->images.size() == 1);
  CHECK(job->images[0].digest_lo == 0x51);
  CHECK(s.runner(a_slot).current_phase() == board_runner::phase::restoring);
  CHECK(tower->stats().encodes == 0);

  // Meanwhile every step is C's, and C decodes on.
  const std::size_t before = text_of(seen, "c1").size();
  long c_steps = 0;
  for (int i = 0; i < 12 && s.wants_step(); ++i)
    for (auto& e : s.step()) {
      CHECK(e.slot == c_slot);
      CHECK_FALSE(e.events.vision_encode);
      ++c_steps;
      keep(e);
    }
  CHECK(c_steps >= 10);
  CHECK(text_of(seen, "c1").size() > before);
  CHECK(s.runner(a_slot).current_phase() == board_runner::phase::restoring);
  CHECK(tower->stats().encodes == 0);

  // The encoder answers (its part, here): the run starts, and ends as a board that encoded in
  // place answers.
  execute_vision_encode(*job);
  REQUIRE(job->failure.empty());
  slot_events next = s.encoded(a_slot, job);
  CHECK_FALSE(next.events.vision_encode);
  board_run log;
  run_all(s, log, nullptr, std::move(next));
  REQUIRE(log.finished.count("a1"));
  CHECK(log.finished.at("a1").output.content == alone.run.events.back().output.content);
  CHECK(same_state(take_snapshot(s.runner(a_slot).slot0().cache_state()), alone.state));
  CHECK(tower->stats().encodes == 1);
  CHECK(tower->cached(p.image));

  // A follow-up that resumes after the image forwards none of its rows: nothing to encode.
  std::vector<token_id> more = p.tokens;
  const auto tail = test_tokens(9, 904);
  more.insert(more.end(), tail.begin(), tail.end());
  image_prompt p2 = p;
  p2.tokens = more;
  slot_events b = s.start(image_job(p2, 4, "a2", "A"));
  CHECK_FALSE(b.events.vision_encode);
  run_all(s, log, nullptr, std::move(b));
  REQUIRE(log.finished.count("a2"));
  CHECK(log.finished.at("a2").cache.resumed_at > static_cast<long>(p.image.end()));
  CHECK(tower->stats().encodes == 1);
}

TEST_CASE("an image encoded off the board's thread serves its run when the vision cache keeps nothing",
          "[board][images]") {
  const model_config c = test_config("qwen35-tiny", 1024);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  auto tower = tower_for(c);
  tower->set_limit(0);  // keeps nothing: the run must use what its own encode returned
  const image_prompt p = make_image_prompt(tower->config(), test_tokens(g + 1, 911), test_tokens(g + 2, 912),
                                           image_digest{0x61, 0x62}, 4);
  const image_answer alone = answer_alone(c, p, 6);

  board_runner r(make_engine(c), with_tower(small_runner_options(), tower));
  board_events first = r.start(image_job(p, 6, "a1", "A"));
  REQUIRE(first.vision_encode);
  execute_vision_encode(*first.vision_encode);
  board_events next = r.encoded(std::move(first.vision_encode));
  CHECK_FALSE(next.vision_encode);  // not asked again: the rows came with the answer
  run_result res = run_to_end(r, std::move(next));
  REQUIRE(res.done);
  CHECK(res.done->source == cache_source::cold);
  CHECK(res.text == alone.run.text);
  CHECK(same_state(take_snapshot(r.slot0().cache_state()), alone.state));
  const vision_stats st = tower->stats();
  CHECK(st.encodes == 1);
  CHECK(st.entries == 0);
}

TEST_CASE("an encode that fails answers the request with a 400 naming it, and the slot serves on",
          "[board][images]") {
  const model_config c = test_config("qwen35-tiny", 1024);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  auto tower = tower_for(c);
  image_prompt p = make_image_prompt(tower->config(), test_tokens(g + 1, 921), test_tokens(g + 2, 922),
                                     image_digest{0x71, 0x72}, 5);
  // Patches one value short: the encoder refuses them.
  auto shorter = std::make_shared<std::vector<float>>(*p.image.patches);
  shorter->pop_back();
  p.image.patches = shorter;

  board_runner r(make_engine(c), with_tower(small_runner_options(), tower));
  board_events first = r.start(image_job(p, 4, "bad", "A"));
  REQUIRE(first.vision_encode);
  execute_vision_encode(*first.vision_encode);
  CHECK(first.vision_encode->failure.find("patches") != std::string::npos);
  run_result res = run_to_end(r, r.encoded(std::move(first.vision_encode)));
  REQUIRE(res.done);
  CHECK(res.done->finish_reason == run_finish::error);
  REQUIRE(!res.events.empty());
  const stream_event& failed = res.events.back();
  CHECK(failed.what == stream_event::kind::failed);
  CHECK(failed.error.status == 400);
  CHECK(failed.error.message.find("patches") != std::string::npos);
  CHECK(tower->stats().encodes == 0);

  // The slot is free, and a good request runs on it.
  const image_prompt good = make_image_prompt(tower->config(), test_tokens(g + 1, 923),
                                              test_tokens(g + 2, 924), image_digest{0x73, 0x74}, 6);
  run_result ok = run_to_end(r, r.start(image_job(good, 4, "good", "A")));
  REQUIRE(ok.done);
  CHECK(ok.done->finish_reason != run_finish::error);
  CHECK(tower->stats().encodes == 1);
}

TEST_CASE("the tower plans each digest once and none it holds", "[board][images]") {
  const model_config c = test_config("qwen35-tiny", 1024);
  auto tower = tower_for(c);
  const image_prompt p = make_image_prompt(tower->config(), test_tokens(5, 921), test_tokens(6, 922),
                                           image_digest{0x71, 0x72}, 3);
  const image_prompt q = make_image_prompt(tower->config(), test_tokens(5, 923), test_tokens(6, 924),
                                           image_digest{0x73, 0x74}, 3);

  // The same picture shown twice, then another: two to encode, in the prompt's order.
  vision_encode_ptr job = tower->plan_encode({p.image, p.image, q.image});
  REQUIRE(job);
  REQUIRE(job->images.size() == 2);
  CHECK(job->images[0].digest_lo == 0x71);
  CHECK(job->images[1].digest_lo == 0x73);

  // Once the tower holds the first, only the second is planned; once it holds both, nothing.
  auto first = std::make_shared<vision_encode>();
  first->weights = job->weights;
  first->images = {p.image};
  execute_vision_encode(*first);
  REQUIRE(first->failure.empty());
  tower->take_encoded(*first);
  vision_encode_ptr rest = tower->plan_encode({p.image, q.image, p.image});
  REQUIRE(rest);
  REQUIRE(rest->images.size() == 1);
  CHECK(rest->images[0].digest_lo == 0x73);
  execute_vision_encode(*rest);
  tower->take_encoded(*rest);
  CHECK_FALSE(tower->plan_encode({q.image, p.image}));
  CHECK(tower->stats().encodes == 2);
}
