// The disk tier with an image in the prompt (runtime/core/token.hpp: an image's rows carry
// negative key ids): the ids are hashed and stored as int32 bit patterns and come back
// unchanged, one image row changes a key, and no lookup resumes at a line inside an image's
// first image_key_rows rows (runtime/core/token_prefix.hpp's rule).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <xxhash.h>

#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/disk/disk_index.hpp"
#include "runtime/disk/disk_names.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/image_row_fixtures.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace df = anchorage::disk_format;

namespace {

// n ids: text (100 + i), with an image's rows at [from, from + rows).
std::vector<token_id> prompt_with_image(std::size_t n, std::size_t from, std::size_t rows,
                                        std::uint32_t image = 1) {
  return testing::prompt_with_image(n, from, rows, image,
                                    [](std::size_t i) { return static_cast<token_id>(100 + i); });
}

}  // namespace

TEST_CASE("disk: a prefix's key hashes an image's rows as int32 bytes and one row changes it",
          "[disk][image]") {
  const auto p = prompt_with_image(24, 6, 10);
  // The documented key: XXH3-64 of the ids as int32 little-endian bytes (this host is).
  std::vector<unsigned char> le;
  for (token_id t : p)
    for (int k = 0; k < 4; ++k)
      le.push_back(static_cast<unsigned char>(static_cast<std::uint32_t>(t) >> (8 * k)));
  CHECK(prefix_hash(p.data(), p.size()) == XXH3_64bits(le.data(), le.size()));
  auto q = p;
  q[12] = image_row_id(2, 6);  // another image's row
  CHECK(prefix_hash(q.data(), q.size()) != prefix_hash(p.data(), p.size()));
  const auto hp = chunk_hashes(p, 24, 4), hq = chunk_hashes(q, 24, 4);
  CHECK(hp[0] == hq[0]);
  CHECK(hp[2] == hq[2]);  // [0, 12): the change is at 12
  CHECK(hp[3] != hq[3]);
  CHECK(hp[5] != hq[5]);
}

TEST_CASE("disk: which lines lie inside an image's first rows", "[disk][image]") {
  const auto p = prompt_with_image(30, 6, 10);  // rows at [6, 16)
  for (std::size_t line = 0; line <= p.size(); ++line) {
    INFO("line " << line);
    CHECK(ends_in_image_key_rows(p, line) == (line >= 7 && line <= 10));
  }
  const auto at_start = prompt_with_image(12, 0, 8);  // an image first: rows at [0, 8)
  for (std::size_t line = 0; line <= at_start.size(); ++line) {
    INFO("line " << line);
    CHECK(ends_in_image_key_rows(at_start, line) == (line >= 1 && line <= 4));
  }
}

TEST_CASE("disk_index: find never resumes inside an image's first rows", "[disk][index][image]") {
  constexpr std::size_t g = 4;
  manual_clock clock{1000};
  disk_index index{g, clock, disk_eviction_options{}};
  const auto p = prompt_with_image(21, 6, 10);  // rows at [6, 16): line 8 is 2 rows in, 12 is 6
  const auto chain = chunk_hashes(p, 12, g);
  for (std::size_t i = 0; i < chain.size(); ++i)
    REQUIRE(index.add_chunk(chain[i], (i + 1) * g, i > 0 ? chain[i - 1] : 0, 100, clock.now_s(),
                            "c-" + std::to_string(i)));
  auto anchor_at = [&](std::size_t line) {
    REQUIRE(index.add_anchor("", chunk_hashes(p, line, g), 50, clock.now_s(), "a-" + std::to_string(line)));
  };
  anchor_at(4);
  anchor_at(8);
  auto hit = index.find(p);
  REQUIRE(hit);
  CHECK(hit->line == 4);  // not 8: only 2 of the image's rows, part of its digest, lie below it
  anchor_at(12);
  hit = index.find(p);
  REQUIRE(hit);
  CHECK(hit->line == 12);  // 6 rows: the whole digest
  // Exactly the anchor at 8 is still found by its own tokens (the writer's question, not a resume).
  CHECK(index.find_exact(std::vector<token_id>(p.begin(), p.begin() + 8)));
}

TEST_CASE("disk: a chunk file with an image's rows decodes to the same ids", "[disk][image]") {
  state_layout l;
  l.grid = 4;
  l.fingerprint = 0x1234;
  l.views = {{"attn.k", 8, 64}};
  l.sections = {{"gdn.S", 16}};
  const auto p = prompt_with_image(16, 3, 9);
  const std::size_t line = 8;
  std::vector<unsigned char> rows(4 * 8);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<unsigned char>(i * 7);
  std::vector<unsigned char> file = encode_chunk_head(l, line, p, {rows.data()});
  file.insert(file.end(), rows.begin(), rows.end());
  const auto r = decode_chunk(file, l, p, line);
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.value.tokens == std::vector<token_id>(p.begin() + 4, p.begin() + 8));
  CHECK(r.value.rows[0] == rows);
  CHECK(r.value.prefix_hash == prefix_hash(p.data(), line));
  // A prompt whose image differs in one row of the chunk, or below it: refused.
  for (std::size_t at : {5u, 3u}) {
    INFO("row at " << at);
    auto q = p;
    q[at] ^= 1;
    REQUIRE(is_image_row(q[at]));
    CHECK(decode_chunk(file, l, q, line).fault == df::fault::wrong_prefix);
  }
}

TEST_CASE("disk: a generation checkpoint with an image's rows in its prompt round-trips",
          "[disk][checkpoint][image]") {
  const model_config c = test_config("tiny");
  auto eng = make_engine(c);
  const auto prompt = prompt_with_image(12, 2, 7);
  const std::vector<token_id> output = {65, 66, 67};
  eng->prefill(test_tokens(prompt.size() + output.size() - 1));  // the rows; their ids are the codec's
  checkpoint_meta m;
  m.key_hash = 0xabc;
  m.prompt_tokens = prompt.size();
  m.tokens = prompt;
  m.tokens.insert(m.tokens.end(), output.begin(), output.end());
  const std::vector<unsigned char> f = encode_checkpoint(eng->cache_state(), m);
  const auto r = decode_checkpoint(f, eng->layout(), prompt, 0xabc);
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.value.meta.tokens == m.tokens);
  CHECK(r.value.meta.prompt_tokens == prompt.size());
  const auto ids = read_checkpoint_tokens(f.data(), f.size());
  REQUIRE(ids.ok());
  CHECK(ids.value == m.tokens);
  auto other = prompt;
  other[4] = image_row_id(2, 2);
  CHECK(decode_checkpoint(f, eng->layout(), other, 0xabc).fault == df::fault::wrong_prefix);
}

TEST_CASE("disk_index: an anchor right after an image, off the grid, stands on a tail chunk",
          "[disk][index][image]") {
  constexpr std::size_t g = 4;
  manual_clock clock{1000};
  disk_index index{g, clock, disk_eviction_options{}};
  const auto p = prompt_with_image(24, 6, 7);  // rows at [6, 13): the image ends at 13, off the grid
  const std::size_t end = 13;
  const auto grid_chain = chunk_hashes(p, 12, g);
  for (std::size_t i = 0; i < grid_chain.size(); ++i)
    REQUIRE(index.add_chunk(grid_chain[i], (i + 1) * g, i > 0 ? grid_chain[i - 1] : 0, 100, clock.now_s(),
                            "c-" + std::to_string(i)));
  const auto chain = chunk_hashes(p, end, g);
  REQUIRE(chain.size() == 4);
  REQUIRE(std::equal(grid_chain.begin(), grid_chain.end(), chain.begin()));
  // The tail's parent is the grid line below it (12), not 13 - grid.
  CHECK_FALSE(index.add_chunk(chain[3], end, grid_chain[1], 25, clock.now_s(), "tail"));
  REQUIRE(index.add_chunk(chain[3], end, grid_chain[2], 25, clock.now_s(), "tail"));
  CHECK(index.chunk(chain[3])->line == end);
  // The anchor at the image's end and one at the grid line below it.
  REQUIRE(index.add_anchor("", chain, 50, clock.now_s(), "a-end"));
  REQUIRE(index.add_anchor("", grid_chain, 50, clock.now_s(), "a-12"));
  const auto id_end = disk_names::anchor_id("", chain.back());
  CHECK(index.anchor(id_end)->line == end);
  CHECK(index.longest_durable_prefix_tokens() == end);

  // A prompt that goes on after the image resumes right after it; one with another image (its
  // first row differs) finds nothing: no anchor lies below that image.
  auto hit = index.find(p);
  REQUIRE(hit);
  CHECK(hit->line == end);
  CHECK(hit->read_bytes == 3 * 100 + 25 + 50);  // 3 grid chunks, the tail, the anchor
  auto q = p;
  q[6] = image_row_id(2, 0);
  CHECK_FALSE(index.find(q));
  CHECK(index.find_exact(std::vector<token_id>(p.begin(), p.begin() + end)));
  // A prompt that ends at the image's end has no text row left to prefill: no resume there.
  hit = index.find(std::vector<token_id>(p.begin(), p.begin() + end));
  CHECK((!hit || hit->line < end));

  // The image end's anchor supersedes the grid anchors below it, and none supersedes it.
  const auto id_12 = disk_names::anchor_id("", grid_chain.back());
  const auto older = index.superseded_by(id_end);
  CHECK(std::find(older.begin(), older.end(), id_12) != older.end());
  CHECK(index.superseded_by(id_12).empty());
  // Removing the grid chunk below the tail removes the tail and the anchor on it.
  const auto gone = index.remove(grid_chain[2]);
  CHECK(std::find(gone.begin(), gone.end(), "tail") != gone.end());
  CHECK(std::find(gone.begin(), gone.end(), "a-end") != gone.end());
  CHECK_FALSE(index.has_anchor(id_end));
}
