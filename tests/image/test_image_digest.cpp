// The pixel digest and the key ids of an image's rows: the digest follows the pixels, the grid
// and the kind; the first image_key_rows ids carry the whole digest (a round trip proves the map
// injective); every id lies in the image rows' negative range.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/image/image_digest.hpp"
#include "runtime/image/image_preprocess.hpp"
#include "runtime/image/image_rows.hpp"

using namespace anchorage;

namespace {

rgb_image gradient(std::uint32_t width, std::uint32_t height) {
  rgb_image im;
  im.width = width;
  im.height = height;
  im.rgb.resize(std::size_t{width} * height * 3);
  for (std::size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = static_cast<std::uint8_t>((i * 7) % 256);
  return im;
}

image_patches patches_with_grid(int grid_h, int grid_w, float fill) {
  image_patches p;
  p.grid_t = 1;
  p.grid_h = grid_h;
  p.grid_w = grid_w;
  p.values.assign(p.patch_rows() * p.row_values(), fill);
  return p;
}

image_digest random_digest(std::mt19937_64& rng) { return image_digest{rng(), rng()}; }

}  // namespace

TEST_CASE("image digest: follows the pixels, the grid and the kind", "[image]") {
  const auto a = preprocess(gradient(256, 256), image_processor_config{});
  REQUIRE(a);
  const auto again = preprocess(gradient(256, 256), image_processor_config{});
  REQUIRE(again);
  CHECK(digest_of(*a) == digest_of(*again));

  // One pixel changed (before the processor): another digest.
  rgb_image changed = gradient(256, 256);
  changed.rgb[(100 * 256 + 37) * 3 + 1] ^= 0x10;
  const auto b = preprocess(changed, image_processor_config{});
  REQUIRE(b);
  CHECK(digest_of(*a) != digest_of(*b));

  // One value changed in the patches.
  image_patches c = *a;
  c.values[12345] = std::nextafter(c.values[12345], 2.0f);
  CHECK(digest_of(*a) != digest_of(c));

  // Same count of values, another grid: 2 x 8 vs 4 x 4 blocks of patches.
  const image_patches two_by_eight = patches_with_grid(2, 8, 0.25f);
  const image_patches four_by_four = patches_with_grid(4, 4, 0.25f);
  REQUIRE(two_by_eight.values == four_by_four.values);
  CHECK(digest_of(two_by_eight) != digest_of(four_by_four));

  // Same values and grid, another row geometry.
  image_patches other_merge = four_by_four;
  other_merge.merge_size = 4;
  CHECK(digest_of(four_by_four) != digest_of(other_merge));

  // An image vs a video of the same patches.
  CHECK(digest_of(*a, image_kind::image) != digest_of(*a, image_kind::video));
  CHECK(digest_of(*a) == digest_of(*a, image_kind::image));

  const std::string hex = digest_of(*a).hex();
  CHECK(hex.size() == 32);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(image_digest{0x1, 0xab}.hex() == "00000000000000ab0000000000000001");
}

namespace {
std::optional<image_key> key_of(const std::vector<token_id>& ids) {
  return image_key_of_rows(ids.data(), ids.size());
}
}  // namespace

TEST_CASE("image rows: the first image_key_rows ids carry the whole digest and the grid", "[image]") {
  std::mt19937_64 rng(27);
  std::vector<image_digest> digests = {
      {0, 0}, {~0ull, ~0ull}, {0x0123456789abcdefull, 0xfedcba9876543210ull}, {1, 0}, {0, 1ull << 63}};
  for (int i = 0; i < 1000; ++i) digests.push_back(random_digest(rng));
  const image_grid g{8, 8};
  for (const image_digest& d : digests) {
    INFO(d.hex());
    const std::vector<token_id> ids = image_row_ids(d, g);
    REQUIRE(ids.size() == 64);
    for (token_id id : ids) {
      CHECK(is_image_row(id));
      CHECK(id < -(1 << 30));  // far from no_token (-1) and every small negative sentinel
    }
    const auto back = key_of(ids);
    REQUIRE(back);
    CHECK(back->digest == d);
    CHECK(back->grid == g);
    // Deterministic, and the same first rows for any grid of the same first-row id... only the
    // grid's row (4) changes with it.
    CHECK(image_row_ids(d, g) == ids);
    const std::vector<token_id> other = image_row_ids(d, image_grid{1, 5});
    CHECK(std::equal(other.begin(), other.begin() + 4, ids.begin()));
    CHECK(other[4] != ids[4]);
    // Not periodic: the rows of one image are all different here (64 ids of 30 bits).
    CHECK(std::set<token_id>(ids.begin(), ids.end()).size() == ids.size());
  }
  // every grid side up to the limit comes back
  for (int h : {1, 2, 5, 17, 1000, image_max_grid_side})
    for (int w : {5, 7, 64, image_max_grid_side}) {
      const auto ids = image_row_ids(image_digest{3, 4}, image_grid{h, w});
      const auto back = image_key_of_rows(ids.data(), image_key_rows);
      REQUIRE(back);
      CHECK(back->grid == image_grid{h, w});
    }
}

TEST_CASE("image rows: digests differing only in high bits differ in their first ids", "[image]") {
  std::mt19937_64 rng(5);
  const image_grid g{1, 5};
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t lo = rng();
    const std::uint64_t hi = rng();
    const int bit = static_cast<int>(rng() % 64);
    const image_digest a{lo, hi};
    const image_digest b{lo, hi ^ (1ull << bit)};  // equal low 64 bits
    const auto ia = image_row_ids(a, g);
    const auto ib = image_row_ids(b, g);
    CHECK(ia != ib);
    // the whitening: equal low 64 bits are no reason for rows 0..3 to agree (each would with a
    // 2^-30 chance; none of these 2000 pairs does)
    for (std::size_t row = 0; row + 1 < image_key_rows; ++row) CHECK(ia[row] != ib[row]);
  }
  // Every single-bit difference, low or high, shows in the first image_key_rows ids.
  const image_digest base{0x5555555555555555ull, 0xaaaaaaaaaaaaaaaaull};
  const auto base_ids = image_row_ids(base, g);
  for (int bit = 0; bit < 128; ++bit) {
    image_digest d = base;
    if (bit < 64) {
      d.lo ^= 1ull << bit;
    } else {
      d.hi ^= 1ull << (bit - 64);
    }
    CHECK(image_row_ids(d, g) != base_ids);
  }
  // A digest whose 30-bit chunks are all equal still gives 5 distinct ids.
  const auto zero_ids = image_row_ids(image_digest{0, 0}, g);
  CHECK(std::set<token_id>(zero_ids.begin(), zero_ids.end()).size() == image_key_rows);
}

TEST_CASE("image rows: the range and the decoder's refusals", "[image]") {
  CHECK(is_image_row(INT32_MIN));
  CHECK(is_image_row(INT32_MIN + (1 << 30) - 1));
  CHECK_FALSE(is_image_row(INT32_MIN + (1 << 30)));
  CHECK_FALSE(is_image_row(-1));
  CHECK_FALSE(is_image_row(-2));
  CHECK_FALSE(is_image_row(0));
  CHECK_FALSE(is_image_row(248056));  // <|image_pad|>
  CHECK_FALSE(is_image_row(INT32_MAX));

  const auto ids = image_row_ids(image_digest{42, 43}, image_grid{2, 4});
  CHECK_FALSE(image_key_of_rows(ids.data(), 4));  // too few
  std::vector<token_id> broken(ids.begin(), ids.begin() + image_key_rows);
  broken[2] = -1;
  CHECK_FALSE(key_of(broken));
  // a grid of fewer than image_key_rows rows is no image's
  const auto small = image_row_ids(image_digest{42, 43}, image_grid{1, 5});
  std::vector<token_id> tiny(small.begin(), small.end());
  tiny[4] = static_cast<token_id>(tiny[4] ^ (4 << 19));  // rows_w 5 -> 1 (bits 19.. hold rows_w - 1)
  const auto t = key_of(tiny);
  CHECK_FALSE(t);
  // Extra ids after the first image_key_rows are ignored.
  const auto k = key_of(ids);
  REQUIRE(k);
  CHECK(k->digest == image_digest{42, 43});
  CHECK(k->grid == image_grid{2, 4});
}

TEST_CASE("image rows: an image's grid gives its key ids", "[image]") {
  const auto p = preprocess(gradient(300, 200), image_processor_config{});
  REQUIRE(p);
  const image_grid g{p->grid_h / p->merge_size, p->grid_w / p->merge_size};
  const auto ids = image_row_ids(digest_of(*p), g);
  CHECK(ids.size() == p->merged_rows());
  const auto back = key_of(ids);
  REQUIRE(back);
  CHECK(back->digest == digest_of(*p));
  CHECK(back->grid == g);
}
