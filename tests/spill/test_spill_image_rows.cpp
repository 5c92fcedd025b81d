// The session spill's files with an image in the conversation (runtime/core/token.hpp: an image's
// rows carry negative key ids): the block and manifest codecs carry every id through unchanged
// (u32 bit patterns, no vocabulary check), and one image row is enough to change a name, an id
// and what a block verifies against.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "runtime/spill/spill_codec.hpp"
#include "tests/support/spill_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace sf = anchorage::spill_format;

namespace {

// A conversation of 14 ids on grid 4 whose ids [3, 12) are an image's rows: blocks [0,4) [4,8)
// [8,12) [12,14), a grid anchor at 4, the end anchor at 14.
struct image_bench {
  state_layout l = spill_test_layout();
  spill_conversation c = [this] {
    spill_conversation x = make_conversation(l, "session-img", 14, 5);
    for (std::size_t i = 3; i < 12; ++i)
      x.tokens[i] = static_cast<token_id>(image_row_id_first + 0x2345678 + static_cast<std::int64_t>(i));
    return x;
  }();
  spill_image img = make_spill_image(l, c, [] {
    spill_image_options o;
    o.grid_anchors = {4};
    return o;
  }());
  const spill_manifest& m() const { return img.manifest; }
};

}  // namespace

TEST_CASE("spill: blocks and a manifest with an image's rows round-trip id for id", "[spill][image]") {
  image_bench t;
  REQUIRE(is_image_row(t.m().tokens[3]));
  REQUIRE(t.m().blocks.size() == 4);
  for (std::size_t i = 0; i < t.m().blocks.size(); ++i) {
    INFO("block " << i);
    const spill_block_ref& ref = t.m().blocks[i];
    const spill_bytes file = encode_spill_block(t.l, ref, t.m().tokens, t.img.blocks[i].rows);
    const auto ok = verify_spill_block(file.data(), file.size(), t.l, ref, t.m().tokens);
    INFO(ok.error);
    CHECK(ok.ok());
    // The same block checked against a conversation whose image differs in one of the
    // block's rows: refused.
    for (std::size_t p = ref.a; p < ref.b; ++p) {
      if (!is_image_row(t.m().tokens[p])) continue;
      std::vector<token_id> other = t.m().tokens;
      other[p] ^= 1;
      const auto wrong = verify_spill_block(file.data(), file.size(), t.l, ref, other);
      CHECK(wrong.fault == sf::fault::wrong_tokens);
    }
  }
  const spill_bytes manifest = encode_spill_manifest(t.l, t.m());
  const auto d = decode_spill_manifest(manifest.data(), manifest.size(), t.l, t.m().id);
  INFO(d.error);
  REQUIRE(d.ok());
  CHECK(d.value.tokens == t.m().tokens);
  CHECK(d.value.id == t.m().id);
}

TEST_CASE("spill: one image row changes the conversation's id, its prefix hashes and names",
          "[spill][image]") {
  image_bench t;
  spill_conversation other = t.c;
  other.tokens[7] ^= 0x100;  // the same image but for one row's key
  REQUIRE(is_image_row(other.tokens[7]));
  const spill_image o = make_spill_image(t.l, other, [] {
    spill_image_options x;
    x.grid_anchors = {4};
    return x;
  }());
  // The conversation's id names its first grid line only: the same; one of its rows: another.
  CHECK(o.manifest.id == t.m().id);
  auto first_line = t.c.tokens;
  first_line[3] ^= 0x100;
  REQUIRE(is_image_row(first_line[3]));
  CHECK(spill_conversation_id(t.c.session_key, first_line, 4) != t.m().id);
  CHECK(spill_prefix_hash(other.tokens.data(), 8) != spill_prefix_hash(t.c.tokens.data(), 8));
  CHECK(spill_prefix_hash(other.tokens.data(), 4) == spill_prefix_hash(t.c.tokens.data(), 4));
  CHECK(o.manifest.blocks[0].name == t.m().blocks[0].name);  // below the change: shared
  CHECK(o.manifest.blocks[1].name != t.m().blocks[1].name);
  CHECK(o.manifest.blocks[2].name != t.m().blocks[2].name);  // above it: the prefix differs
}
