// The disk tier's anchor right after an image (issue 27 item 6, docs/DISK_TIER.md "After an
// image"): an image whose last row ends off the grid gets a tail chunk (the rows from the grid
// line below to its end) and an anchor file there (docs/DISK_FORMAT.md, "Version 4"), so after a
// restart a prompt that parts right after the image resumes from the disk at the image's end, not
// at the grid line below it, and answers as a cold prefill: its text, its output and the engine's
// whole state, bit for bit.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "protocol/disk_format.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "tests/support/board_images.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace df = anchorage::disk_format;

namespace {

std::vector<unsigned char> whole_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE(
    "disk tier: a prompt that parts right after an image resumes from the disk there, as a cold prefill",
    "[tiers][runner][images][disk]") {
  const model_config c = test_config("qwen35-tiny", 1024);
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const vision_config v = tiny_vision_config(c.d_model);
  const std::vector<token_id> head = test_tokens(3 * g + 5, 881);
  const image_digest digest{0x5eed5eed5eed5eedULL, 0x0ddba11c0ffee000ULL};
  // Two prompts that share the head and the image, then part at its first text row.
  const image_prompt first = make_image_prompt(v, head, test_tokens(2 * g + 7, 882), digest, 3);
  const image_prompt second = make_image_prompt(v, head, test_tokens(g + 11, 883), digest, 3);
  const std::size_t end = first.image.end();
  REQUIRE(end % g != 0);  // off the grid: without its own anchor the disk resumes at 3 g
  REQUIRE(second.tokens[end] != first.tokens[end]);
  constexpr long max_tokens = 6;
  const image_answer cold = answer_alone(c, second, max_tokens);

  temp_dir dir("anchorage-disk-image-anchor");
  uring_env env;  // outlives every runner below
  const auto [o, d] = with_test_disk(dir.str());
  {
    // The first prompt, once: rule 4 writes the tail chunk and the anchor at the image's end.
    board_runner w(make_engine(c), with_tower(o, tower_for(c)));
    disk_driver wd(env, w.slot0().layout(), d);
    const image_answer a = answer_of(w, image_job(first, 2, "w1", "w"), &wd);
    CHECK(a.run.done->source == cache_source::cold);
    const auto hit = wd.service->store().find(second.tokens);
    REQUIRE(hit);
    CHECK(hit->line == end);
  }
  // On disk: one chunk and one anchor at the image's end, both version 4; every other file on
  // the grid in version 2.
  int tails = 0, tail_anchors = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.str())) {
    if (!entry.is_regular_file()) continue;
    const std::string path = entry.path().string();
    const std::vector<unsigned char> bytes = whole_file(entry.path());
    if (bytes.size() < df::anchor_fixed_bytes) continue;
    const auto chunk = read_chunk_header(bytes.data(), bytes.size());
    const auto anchor = read_anchor_header(bytes.data(), bytes.size());
    if (chunk.ok()) {
      INFO(path << ": chunk at " << chunk.value.line);
      CHECK(chunk.value.version == df::version_of_line(chunk.value.line, g));
      if (chunk.value.line == end) ++tails;
      CHECK((chunk.value.line % g == 0 || chunk.value.line == end));
    } else if (anchor.ok()) {
      INFO(path << ": anchor at " << anchor.value.line);
      CHECK(anchor.value.version == df::version_of_line(anchor.value.line, g));
      if (anchor.value.line == end) ++tail_anchors;
    }
  }
  CHECK(tails == 1);
  CHECK(tail_anchors == 1);
  {
    // A restart: the second prompt resumes at the image's end and answers as a cold prefill.
    board_runner r(make_engine(c), with_tower(o, tower_for(c)));
    disk_driver rd(env, r.slot0().layout(), d);
    CHECK(rd.scan.damaged_removed == 0);
    const image_answer b = answer_of(r, image_job(second, max_tokens, "b", "b"), &rd);
    INFO("resumed at " << b.run.done->resumed_at << " from " << to_string(b.run.done->source));
    CHECK(b.run.done->source == cache_source::disk);
    CHECK(b.run.done->resumed_at == static_cast<long>(end));
    check_answers_as(b, cold);
  }
}
