// Image rows (runtime/core/token.hpp: an image's rows carry negative key ids in the prompt) and
// the suffix store: they never enter the log, each run of them cuts a request into segments (in
// the store, its log, the writer's deltas and the readers' view), and no draft proposes one or
// runs across one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/speculative/suffix_lookup.hpp"
#include "runtime/suffix/suffix_feed.hpp"
#include "runtime/suffix/suffix_file.hpp"
#include "runtime/suffix/suffix_log_format.hpp"
#include "runtime/suffix/suffix_match.hpp"
#include "runtime/suffix/suffix_store.hpp"
#include "tests/support/image_row_fixtures.hpp"
#include "tests/support/suffix_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::cat;
using anchorage::testing::suffix_options;
using anchorage::testing::temp_dir;

namespace {

// An image's rows: n key ids, distinct per (image, row), each checked to be an image row.
std::vector<token_id> image_rows(std::uint32_t image, std::size_t n) {
  std::vector<token_id> rows = testing::image_rows(image, n);
  for (token_id t : rows) REQUIRE(is_image_row(t));
  return rows;
}

bool all_text(const std::vector<token_id>& ids) {
  return std::all_of(ids.begin(), ids.end(), [](token_id t) { return t >= 0; });
}

}  // namespace

TEST_CASE("suffix store: an image's rows never enter the log and cut the request into segments",
          "[suffix][image]") {
  temp_dir dir("anchorage-suffix-image");
  const std::vector<token_id> a = {10, 11, 12, 13, 14}, b = {20, 21, 22}, out = {30, 31, 32, 33};
  const auto request = cat({a, image_rows(1, 8), b, image_rows(2, 6), out});
  {
    suffix_store store(suffix_options(dir.str()));
    REQUIRE(store.is_open());
    const suffix_add_report r = store.add(request);
    CHECK(r.appended == a.size() + b.size() + out.size());
    CHECK_FALSE(r.continued);
    CHECK(store.ids() == cat({a, b, out}));
    CHECK(store.segment_starts() == std::vector<std::size_t>{0, 5, 8});
    CHECK(store.stats().segments == 3);
    // A match never runs from one segment into the next: a's end is followed by nothing.
    CHECK(store.propose({12, 13, 14}, 4).empty());
    CHECK(store.propose({20, 21}, 4) == std::vector<token_id>{22});
    CHECK(store.propose({30, 31}, 4) == std::vector<token_id>{32, 33});
    // A recent window holding an image's rows matches only the text after them.
    CHECK(store.propose(cat({image_rows(2, 6), {30, 31}}), 4) == std::vector<token_id>{32, 33});
    store.rebuild();
    CHECK(store.propose({12, 13, 14}, 4).empty());
    CHECK(store.propose({30, 31}, 4) == std::vector<token_id>{32, 33});
  }
  // Reopened: the log holds the same ids and segments.
  suffix_store again(suffix_options(dir.str()));
  REQUIRE(again.is_open());
  CHECK(again.ids() == cat({a, b, out}));
  CHECK(again.segment_starts() == std::vector<std::size_t>{0, 5, 8});
  CHECK(again.stats().torn_tails_cut == 0);
}

TEST_CASE("suffix store: a request that ends in an image's rows is not continued across them",
          "[suffix][image]") {
  temp_dir dir("anchorage-suffix-image-tail");
  suffix_store store(suffix_options(dir.str()));
  REQUIRE(store.is_open());
  const std::vector<token_id> a = {10, 11, 12}, b = {20, 21, 22};
  const auto first = cat({a, image_rows(1, 6)});
  CHECK(store.add(first).appended == 3);
  // The same request again: held whole, nothing appended.
  CHECK(store.add(first).appended == 0);
  // The conversation grown past the image: b starts a segment of its own, not joined to a's.
  const suffix_add_report r = store.add(cat({first, b}));
  CHECK(r.skipped == first.size());
  CHECK(r.appended == 3);
  CHECK_FALSE(r.continued);
  CHECK(store.segment_starts() == std::vector<std::size_t>{0, 3});
  CHECK(store.propose({11, 12}, 4).empty());
  // A request of nothing but an image's rows appends nothing.
  CHECK(store.add(image_rows(3, 7)).appended == 0);
  CHECK(store.ids() == cat({a, b}));
  // Grown after text, it continues its segment as before.
  const suffix_add_report grown = store.add(cat({first, b, {23, 24}}));
  CHECK(grown.continued);
  CHECK(store.segment_starts() == std::vector<std::size_t>{0, 3});
  CHECK(store.propose({21, 22}, 4) == std::vector<token_id>{23, 24});
}

TEST_CASE("suffix store: one add cut into many segments still keeps to half the cap", "[suffix][image]") {
  temp_dir dir("anchorage-suffix-image-cap");
  suffix_store_options o = suffix_options(dir.str());
  o.cap_bytes = suffix_log::header_bytes + 2000;
  suffix_store store(o);
  REQUIRE(store.is_open());
  std::vector<token_id> request;  // text and image rows in turn: one record per text id
  for (std::uint32_t i = 0; i < 300; ++i) {
    request.push_back(static_cast<token_id>(i));
    request.push_back(image_rows(i, 1)[0]);
  }
  const suffix_add_report r = store.add(request);
  CHECK(r.appended > 0);
  CHECK(store.stats().bytes <= suffix_log::header_bytes + 1000);
  CHECK(store.ids().back() == 299);  // the newest ids are the ones kept
  CHECK(store.stats().segments == r.appended);
}

TEST_CASE("suffix feed and view: a delta carries the segments an image cut, the view answers as the store",
          "[suffix][image]") {
  temp_dir dir("anchorage-suffix-image-view");
  suffix_feed feed(suffix_options(dir.str()));
  REQUIRE(feed.store().is_open());
  suffix_lookup lookup;
  lookup.view().install(feed.snapshot());
  const std::vector<token_id> a = {10, 11, 12, 13}, b = {20, 21, 22}, c = {40, 41, 42};
  const suffix_feed_out out = feed.add(cat({a, image_rows(1, 9), b, image_rows(2, 5), c}));
  REQUIRE(out.delta);
  CHECK(out.delta->ids == cat({a, b, c}));
  CHECK(out.delta->starts == std::vector<std::size_t>{4, 7});
  REQUIRE(lookup.view().extend(*out.delta));
  CHECK(lookup.view().segments() == 3);
  for (const std::vector<token_id>& recent :
       {std::vector<token_id>{12, 13}, {11, 12, 13}, {21, 22}, {20, 21}, {40, 41}}) {
    INFO("recent ending " << recent.back());
    const auto from_view = lookup.propose(recent.data(), recent.size(), 4);
    CHECK(from_view == const_cast<suffix_store&>(feed.store()).propose(recent, 4));
    CHECK(all_text(from_view));
  }
  CHECK(lookup.propose(std::vector<token_id>{12, 13}.data(), 2, 4).empty());  // a's end, not b's start
}

TEST_CASE("suffix log: a record holding a negative id is damage, cut with the rest", "[suffix][image]") {
  std::vector<unsigned char> bytes = suffix_log::encode_header(7);
  const std::vector<token_id> good = {1, 2, 3}, bad = {4, image_rows(1, 5)[0], 6}, later = {7, 8};
  suffix_log::encode_record(bytes, good.data(), good.size(), false);
  const std::size_t whole = bytes.size();
  suffix_log::encode_record(bytes, bad.data(), bad.size(), false);
  suffix_log::encode_record(bytes, later.data(), later.size(), false);
  const suffix_log::parsed_log p = suffix_log::parse(bytes.data(), bytes.size(), 7);
  REQUIRE(p.header == suffix_log::parsed_log::header_state::ok);
  CHECK(p.ids == good);
  CHECK(p.records == 1);
  CHECK(p.torn);
  CHECK(p.whole_bytes == whole);
}

TEST_CASE("propose over a request's own prompt never drafts an image's rows", "[suffix][image]") {
  const auto img = image_rows(1, 6);
  static const suffix_index no_index;
  static const std::vector<std::size_t> one_segment = {0};
  auto draft = [&](const std::vector<token_id>& ids, const std::vector<token_id>& recent) {
    suffix_corpus own;
    own.ids = ids.data();
    own.n = ids.size();
    own.seg_starts = &one_segment;
    own.index = &no_index;
    return propose(own, recent.data(), recent.size(), 8, suffix_query_options{});
  };
  // <vision_start> (here 5) then an image: the same marker later is followed by nothing to draft.
  const std::vector<token_id> once = cat({{1, 2, 5}, img, {9, 1, 2, 5}});
  CHECK(draft(once, {1, 2, 5}).empty());
  // Text and an image both followed the match once: the text is drafted (at one half), the
  // image's rows never are.
  const std::vector<token_id> both = cat({{1, 2, 5, 70, 71, 8}, {1, 2, 5}, img, {8, 1, 2, 5}});
  const auto d = draft(both, {1, 2, 5});
  CHECK(d == std::vector<token_id>{70, 71, 8, 1, 2, 5});
  CHECK(all_text(d));
  // A match through the same image's rows drafts the text after them.
  const std::vector<token_id> again = cat({{3, 5}, img, {6, 44, 45, 3, 5}, img});
  CHECK(draft(again, cat({{3, 5}, img})) == std::vector<token_id>{6, 44, 45, 3, 5});
}
