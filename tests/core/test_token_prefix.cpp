// common_prefix: the shared tokens a cached state may be reused for, never ending inside an
// image's first image_key_rows rows (their ids have compared only part of the image's digest).
#include <catch2/catch.hpp>

#include <vector>

#include "runtime/core/image_end.hpp"
#include "runtime/core/token_prefix.hpp"

using namespace anchorage;

namespace {

// An image row's id with payload p.
token_id row(int p) { return static_cast<token_id>(image_row_id_first + p); }

}  // namespace

TEST_CASE("common_prefix counts shared tokens of text", "[core][images]") {
  CHECK(common_prefix({1, 2, 3}, {1, 2, 4}) == 2);
  CHECK(common_prefix({1, 2, 3}, {1, 2, 3, 4}) == 3);
  CHECK(common_prefix({}, {1}) == 0);
  CHECK(common_prefix({-1, 5}, {-1, 6}) == 1);  // a sentinel-like negative is no image row
}

TEST_CASE("common_prefix never ends inside an image's first image_key_rows rows", "[core][images]") {
  REQUIRE(image_key_rows == 5);
  const std::vector<token_id> a = {7, 8, row(1), row(2), row(3), row(4), row(5), row(6), row(7), 9, 10};
  for (std::size_t k = 1; k < image_key_rows; ++k) {
    // two images whose first k rows agree (a forced collision of k 30-bit chunks), then part
    std::vector<token_id> b = a;
    b[2 + k] = row(100);
    INFO("rows agreeing: " << k);
    CHECK(common_prefix(a, b) == 2);
    CHECK(common_prefix(b, a) == 2);
    // a cached prefix that stops k rows into the image: not reusable past the image's start
    const std::vector<token_id> cut(a.begin(), a.begin() + 2 + static_cast<long>(k));
    CHECK(common_prefix(cut, a) == 2);
    CHECK(common_prefix(a, cut) == 2);
  }
  // image_key_rows rows or more pin the whole digest: the match stands wherever it ends
  for (std::size_t k = image_key_rows; k < 7; ++k) {
    std::vector<token_id> b = a;
    b[2 + k] = row(100);
    CHECK(common_prefix(a, b) == 2 + k);
    const std::vector<token_id> cut(a.begin(), a.begin() + 2 + static_cast<long>(k));
    CHECK(common_prefix(cut, a) == 2 + k);
  }
  CHECK(common_prefix(a, a) == a.size());
  // a second image after text: the rule applies to it alone
  std::vector<token_id> two = a;
  two.insert(two.end(), {row(11), row(12), row(13), row(14), row(15), row(16)});
  std::vector<token_id> other = two;
  other[a.size() + 2] = row(200);
  CHECK(common_prefix(two, other) == a.size());
}

TEST_CASE("image_ends_at: right after an image's last row, at the prompt's end too", "[core][images]") {
  const std::vector<token_id> t = {7, row(1), row(2), row(3), 8, row(4), row(5)};
  CHECK_FALSE(image_ends_at(t, 0));
  CHECK_FALSE(image_ends_at(t, 1));  // after text
  CHECK_FALSE(image_ends_at(t, 2));  // inside the first image
  CHECK_FALSE(image_ends_at(t, 3));
  CHECK(image_ends_at(t, 4));  // the first image's end, text after it
  CHECK_FALSE(image_ends_at(t, 5));
  CHECK_FALSE(image_ends_at(t, 6));
  CHECK(image_ends_at(t, 7));        // the second image's end is the prompt's
  CHECK_FALSE(image_ends_at(t, 8));  // past the end
  CHECK_FALSE(image_ends_at({1, 2}, 2));
}
