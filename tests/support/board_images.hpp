#pragma once
// Board jobs with an image in their prompt, for the board runner's tests (tests/board/): a tiny
// random vision tower, an image of random patches named by a given digest at a given row, its
// rows' key ids as the prompt renderer makes them, and a run's answer with the engine's whole
// state after it, to compare bit for bit with a board that never saw anything else.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/image/image_rows.hpp"
#include "runtime/vision/vision_tower.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/vision_fixtures.hpp"

namespace anchorage::testing {

inline constexpr int image_patch_side = 8;  // 8 x 8 patches: 4 x 4 rows after the 2 x 2 merge

inline std::shared_ptr<vision_tower> tower_for(const model_config& c) {
  const vision_config v = tiny_vision_config(c.d_model);
  auto w = std::make_shared<const vision_weights>(random_tower_weights(v, 41));
  return std::make_shared<vision_tower>(std::move(w), 64u << 20);
}

// One image of image_patch_side x image_patch_side random patches, at `start`.
inline prompt_image image_at(const vision_config& v, std::size_t start, image_digest digest,
                             std::uint64_t seed) {
  prompt_image p;
  p.start = start;
  p.grid_h = p.grid_w = image_patch_side;
  p.merge = v.spatial_merge_size;
  p.digest_lo = digest.lo;
  p.digest_hi = digest.hi;
  p.patches = std::make_shared<const std::vector<float>>(
      random_patches(v, 1, image_patch_side, image_patch_side, seed));
  return p;
}

// head, the image's rows, tail.
struct image_prompt {
  prompt_image image;
  std::vector<token_id> tokens;
};

inline image_prompt make_image_prompt(const vision_config& v, const std::vector<token_id>& head,
                                      const std::vector<token_id>& tail, image_digest digest,
                                      std::uint64_t seed) {
  image_prompt p{image_at(v, head.size(), digest, seed), head};
  const int side = image_patch_side / v.spatial_merge_size;
  const std::vector<token_id> rows = image_row_ids(digest, image_grid{side, side});
  p.tokens.insert(p.tokens.end(), rows.begin(), rows.end());
  p.tokens.insert(p.tokens.end(), tail.begin(), tail.end());
  return p;
}

inline board_job image_job(const image_prompt& p, long max_tokens, const std::string& id,
                           const std::string& session) {
  board_job j = job_of(p.tokens, max_tokens, id, session);
  j.images = {p.image};
  return j;
}

inline board_runner_options with_tower(board_runner_options o, std::shared_ptr<vision_tower> tower) {
  o.vision = std::move(tower);
  return o;
}

// A small runner's options with a disk tier in `dir` that writes prompts of 64 ids and more, and
// those disk options (for the disk_driver beside the runner).
struct runner_with_disk {
  board_runner_options runner;
  disk_tier_options disk;
};
inline runner_with_disk with_test_disk(const std::string& dir) {
  runner_with_disk r{small_runner_options(), test_disk_options(dir)};
  r.disk.admission.min_tokens = 64;
  r.runner.disk = r.disk;
  return r;
}

// A run's answer and the engine's whole state after it (the prompt and the answer forwarded).
struct image_answer {
  run_result run;
  snapshot state;
};

inline image_answer answer_of(board_runner& r, const board_job& j, disk_driver* disk = nullptr) {
  image_answer a{run_to_end(r, r.start(j), disk), {}};
  REQUIRE(a.run.done);
  a.state = take_snapshot(r.slot0().cache_state());
  return a;
}

inline bool same_state(const snapshot& x, const snapshot& y) {
  return x.length == y.length && x.sections == y.sections && x.views == y.views;
}

// What a board that never saw anything else answers: a cold prefill.
inline image_answer answer_alone(const model_config& c, const image_prompt& p, long max_tokens) {
  board_runner r(make_engine(c), with_tower(small_runner_options(), tower_for(c)));
  image_answer a = answer_of(r, image_job(p, max_tokens, "alone", "alone"));
  REQUIRE(a.run.done->source == cache_source::cold);
  return a;
}

// `got` answers as `want` does, bit for bit: the text, the output and the engine's state.
inline void check_answers_as(const image_answer& got, const image_answer& want) {
  CHECK(got.run.text == want.run.text);
  CHECK(got.run.events.back().output.content == want.run.events.back().output.content);
  CHECK(same_state(got.state, want.state));
}

}  // namespace anchorage::testing
