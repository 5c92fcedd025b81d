// The drafter with an image in the prompt (runtime/core/token.hpp: an image's rows carry negative
// key ids, which the verify round refuses): no lookup draft, from the request's own tokens or
// from a store, holds one; a draft stops before it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/speculative/drafter.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/image_row_fixtures.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A store that drafts what the test says.
class fixed_source final : public lookup_source {
 public:
  explicit fixed_source(std::vector<token_id> ids) : ids_(std::move(ids)) {}
  std::vector<token_id> propose(const token_id*, std::size_t, std::size_t max_draft) override {
    return std::vector<token_id>(ids_.begin(),
                                 ids_.begin() + static_cast<long>(std::min(max_draft, ids_.size())));
  }

 private:
  std::vector<token_id> ids_;
};

speculative_options lookup_options(bool own) {
  speculative_options o;
  o.mode = speculative_mode::lookup;
  o.draft_max = 8;
  o.lookup_own = own;
  return o;
}

}  // namespace

TEST_CASE("drafter: the request's own prompt never drafts an image's rows", "[speculative][image]") {
  auto eng = make_engine(test_config("tiny"));
  const auto img = image_rows(1, 6);
  // <vision_start> (here 5) opened an image in the prompt; the output writes 1 2 5 again.
  const std::vector<token_id> prompt = cat({{1, 2, 5}, img, {9, 1, 2}});
  {
    drafter d(lookup_options(true), nullptr);
    const draft_proposal p = d.propose(*eng, prompt, {5}, {}, nullptr, 8);
    CHECK(p.ids.empty());
  }
  // Text followed the match once and another image once: the text is drafted, up to the image
  // after it.
  const std::vector<token_id> prompt2 = cat({{1, 2, 5, 70}, img, {1, 2, 5}, image_rows(2, 7), {9, 1, 2}});
  drafter d(lookup_options(true), nullptr);
  const draft_proposal p = d.propose(*eng, prompt2, {5}, {}, nullptr, 8);
  CHECK(p.from == draft_kind::lookup);
  CHECK(p.ids == std::vector<token_id>{70});
}

TEST_CASE("drafter: a store's draft stops before an id outside the vocabulary", "[speculative][image]") {
  auto eng = make_engine(test_config("tiny"));
  const int vocab = eng->config().vocab;
  const auto img = image_rows(1, 6);
  const std::vector<token_id> prompt = cat({{1, 2, 3}, img, {4}});
  struct tried {
    std::vector<token_id> from_store, expected;
  };
  for (const tried& t : {tried{{7, 8, img[0], 9}, {7, 8}}, tried{{img[2], 7}, {}}, tried{{7, vocab, 8}, {7}},
                         tried{{7, -1}, {7}}, tried{{7, 8, 9}, {7, 8, 9}}}) {
    fixed_source store(t.from_store);
    drafter d(lookup_options(false), &store);
    const draft_proposal p = d.propose(*eng, prompt, {5}, {}, nullptr, 8);
    CHECK(p.ids == t.expected);
    if (!t.expected.empty()) CHECK(p.from == draft_kind::store);
  }
}
