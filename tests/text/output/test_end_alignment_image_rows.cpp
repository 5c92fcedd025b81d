// End alignment with an image in the conversation (runtime/core/token.hpp: an image's rows carry
// negative key ids): the rows are matched id for id and never read as text, so the text rule
// works around them, a differing image gives no alignment, and nothing throws.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/text/output/end_alignment.hpp"
#include "runtime/text/output/end_text_match.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/image_row_fixtures.hpp"

using namespace anchorage;
using anchorage::testing::cat;
using anchorage::testing::image_rows;

namespace {

const tokenizer tok;

std::vector<token_id> enc(const std::string& text) { return tok.encode(text, true); }

// R: an earlier answer in the prompt (so the rules apply from its start), then a user turn with
// image `image` and text, then the new answer "yo".
const std::string earlier = "<|im_start|>assistant\nok<|im_end|>\n<|im_start|>user\n";
const std::string ask = "<|im_end|>\n<|im_start|>assistant\n";

end_record record_with(const std::vector<token_id>& image, const std::string& user_text) {
  end_record r;
  r.rows = cat({enc(earlier), image, enc(user_text + ask)});
  r.prompt_len = r.rows.size();
  const std::vector<token_id> answer = enc("yo");
  r.rows.insert(r.rows.end(), answer.begin(), answer.end());
  const std::size_t ok_at = enc("<|im_start|>assistant\n").size();
  r.answers = {{ok_at, ok_at + 2}, {r.prompt_len, r.rows.size()}};
  return r;
}

}  // namespace

TEST_CASE("end alignment: the text rule stops at an image's rows and aligns the text after them",
          "[end_alignment][image]") {
  const auto img = image_rows(1, 6);
  const end_record r = record_with(img, "hi");
  REQUIRE(well_formed(r));
  // The client sends the same image back and the text after it with a trailing space the
  // template trims: the text rule must read "hi" alone, not the image's rows before it.
  const std::vector<token_id> client = cat({enc(earlier), img, enc("hi " + ask + "yo<|im_end|>\n")});
  std::optional<alignment> a;
  REQUIRE_NOTHROW(a = align_to_end(r, client, true));
  REQUIRE(a);
  CHECK(a->used_whitespace);
  CHECK(std::vector<token_id>(a->served.begin(), a->served.begin() + static_cast<long>(r.rows.size())) ==
        r.rows);
  // Without end_align the whitespace must match: no alignment, and no throw.
  REQUIRE_NOTHROW(a = align_to_end(r, client, false));
  CHECK_FALSE(a);
}

TEST_CASE("end alignment: the text rule right after an image starts at the image's end",
          "[end_alignment][image]") {
  const auto img = image_rows(1, 6);
  // The rows hold an invalid byte right after the image, which the server showed as U+FFFD and
  // the client sends back as that character's bytes: only the text rule aligns them, and its
  // stretch must start after the image's rows, not at them.
  end_record r;
  r.rows = cat({enc(earlier), img, enc("a\xff" + ask), enc("yo")});
  r.prompt_len = r.rows.size() - 2;
  const std::size_t ok_at = enc("<|im_start|>assistant\n").size();
  r.answers = {{ok_at, ok_at + 2}, {r.prompt_len, r.rows.size()}};
  REQUIRE(well_formed(r));
  const std::vector<token_id> client =
      cat({enc(earlier), img, enc("a\xef\xbf\xbd" + ask + "yo<|im_end|>\n")});
  std::optional<alignment> a;
  REQUIRE_NOTHROW(a = align_to_end(r, client, false));
  REQUIRE(a);
  CHECK(a->used_text);
}

TEST_CASE("end alignment: another image in the client's copy gives no alignment", "[end_alignment][image]") {
  const auto img = image_rows(1, 6), other = image_rows(2, 6);
  const end_record r = record_with(img, "hi");
  // The same text, another image (its first row differs, or only a later one).
  auto later_row = img;
  later_row[5] = other[5];
  for (const auto& image : {other, later_row}) {
    for (const std::string& text : {std::string("hi"), std::string("hi ")}) {
      const std::vector<token_id> client = cat({enc(earlier), image, enc(text + ask + "yo<|im_end|>\n")});
      std::optional<alignment> a;
      REQUIRE_NOTHROW(a = align_to_end(r, client, true));
      CHECK_FALSE(a);
    }
  }
  // The client's copy holding the placeholder's text where R holds the rows: no alignment.
  const std::vector<token_id> as_text = cat({enc(earlier), enc("<|image_pad|>hi " + ask + "yo<|im_end|>\n")});
  std::optional<alignment> a;
  REQUIRE_NOTHROW(a = align_to_end(r, as_text, true));
  CHECK_FALSE(a);
}

TEST_CASE("end alignment: a client that sends every row back, image included, aligns exactly",
          "[end_alignment][image]") {
  const end_record r = record_with(image_rows(1, 6), "hi");
  const std::vector<token_id> client = cat({r.rows, enc("<|im_end|>\n")});
  const auto a = align_to_end(r, client, true);
  REQUIRE(a);
  CHECK(a->served == client);
  CHECK(a->client_matched == r.rows.size());
}

TEST_CASE("end text match: neither stretch holds an image's rows", "[end_alignment][image]") {
  const auto img = image_rows(1, 5);
  const std::vector<token_id> rows = cat({enc("ab"), img, enc("cd")});
  // The client holds the same image after the same text: both stretches stop at it, as at a
  // shared special token.
  const std::vector<token_id> same = cat({enc("ab "), img, enc("cd")});
  end_text::query q{rows, same, tok};
  q.limit = rows.size();
  q.trail_trim = true;
  std::optional<end_text::match> m;
  REQUIRE_NOTHROW(m = end_text::match_text(q));
  REQUIRE(m);
  CHECK(m->rows_end == 2);
  CHECK(m->client_end == 3);
  // Another image there: R's stretch still stops before its rows, C's before its own.
  const std::vector<token_id> other = cat({enc("ab"), image_rows(2, 5), enc("cd")});
  end_text::query q2{rows, other, tok};
  q2.limit = rows.size();
  REQUIRE_NOTHROW(m = end_text::match_text(q2));
  REQUIRE(m);
  CHECK(m->rows_end == 2);
  CHECK(m->client_end == 2);
}
