// decode() of a prompt that holds an image's rows (runtime/core/token.hpp: negative key ids in
// place of the image's placeholder): each run of rows reads back as the placeholder the template
// rendered there, once; any other id outside the vocabulary still throws.
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/text/tokenizer/bpe_tokenizer.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/image_row_fixtures.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using anchorage::testing::bpe_fixture;
using anchorage::testing::cat;
using anchorage::testing::image_rows;

namespace {

void check_decodes_images(const tokenizer& tok) {
  const auto a = tok.encode("look: ", false), b = tok.encode(" and ", false), c = tok.encode("!", false);
  const std::vector<token_id> ids = cat({a, image_rows(1, 6), b, image_rows(2, 9), c});
  CHECK(tok.decode(ids) == "look: <|image_pad|> and <|image_pad|>!");
  CHECK(tok.decode(ids.data(), ids.size()) == tok.decode(ids));
  // A run is one placeholder however long; the extreme ids of the range are rows too.
  CHECK(tok.decode(image_rows(3, 1)) == "<|image_pad|>");
  CHECK(tok.decode({static_cast<token_id>(image_row_id_first),
                    static_cast<token_id>(image_row_id_end - 1)}) == "<|image_pad|>");
  // One row is still no token of the vocabulary.
  CHECK_FALSE(tok.is_defined(image_rows(1, 1)[0]));
  CHECK_FALSE(tok.is_special(image_rows(1, 1)[0]));
  CHECK_FALSE(tok.is_whitespace(image_rows(1, 1)[0]));
  CHECK_THROWS_AS(tok.token_text(image_rows(1, 1)[0]), std::out_of_range);
  // Every other id outside the vocabulary still throws: no_token, an id just past the image
  // rows' range, one past the vocabulary.
  for (const token_id bad : {no_token, static_cast<token_id>(image_row_id_end), tok.vocab_size()}) {
    INFO("id " << bad);
    CHECK_THROWS_AS(tok.decode(cat({a, {bad}})), std::out_of_range);
  }
}

}  // namespace

TEST_CASE("decode: each run of an image's rows is one placeholder (byte tokenizer)", "[tokenizer][image]") {
  check_decodes_images(tokenizer());
}

TEST_CASE("decode: each run of an image's rows is one placeholder (BPE)", "[tokenizer][bpe][image]") {
  const tokenizer tok = tokenizer::from_json_file(bpe_fixture("tiny_qwen35.json"));
  check_decodes_images(tok);
  // The BPE class itself decodes the same way.
  const bpe_tokenizer& bpe = *tok.bpe();
  const std::vector<token_id> ids = cat({tok.encode("x", false), image_rows(4, 5), tok.encode("y", false)});
  CHECK(bpe.decode(ids) == "x<|image_pad|>y");
}
