// The disk tier's admission policy (docs/DISK_TIER.md, "What is written"): what a request writes, decided
// before its prefill, from token ids alone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "runtime/disk/disk_admission.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "tests/support/image_row_fixtures.hpp"

using namespace anchorage;

namespace {

using lines = std::vector<std::size_t>;
constexpr std::size_t g = 16;  // a small grid keeps prompts short

// `n` ids, distinct from every other stream's: stream s gives s * 1'000'000 + i.
std::vector<token_id> ids(std::size_t n, int stream = 1) {
  std::vector<token_id> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<token_id>(stream * 1'000'000 + i);
  return t;
}

// `head` then `tail_n` ids of another stream: a prompt that parts from ids(...) at `head`.
std::vector<token_id> parted(const std::vector<token_id>& head, std::size_t tail_n, int stream) {
  std::vector<token_id> t = head;
  const auto tail = ids(tail_n, stream);
  t.insert(t.end(), tail.begin(), tail.end());
  return t;
}

lines every_line(std::size_t from, std::size_t to) {  // from, from + g, ..., to
  lines out;
  for (std::size_t b = from; b <= to; b += g) out.push_back(b);
  return out;
}

disk_admission small_policy(std::size_t capacity = 65536) {
  disk_admission_options o;
  o.min_tokens = 64;
  o.capacity = capacity;
  return disk_admission(o);
}

admission_request cold() {
  admission_request r;
  r.grid = g;
  return r;
}

}  // namespace

TEST_CASE("a prompt seen once writes its chunks and no anchor", "[admission]") {
  disk_admission a = small_policy();
  const auto p = ids(200);  // lines 16 .. 192, a tail of 8
  const admission_plan plan = a.plan(p, cold());
  CHECK(plan.chunks == every_line(g, 192));
  CHECK(plan.anchors.empty());
  CHECK(a.count_of(prefix_hash(p.data(), 192)) == 1);
}

TEST_CASE("a prompt seen twice gets an anchor at its longest line", "[admission]") {
  disk_admission a = small_policy();
  const auto p = ids(200);
  a.plan(p, cold());
  const admission_plan again = a.plan(p, cold());
  CHECK(again.chunks == every_line(g, 192));
  CHECK(again.anchors == lines{192});
  CHECK(a.count_of(prefix_hash(p.data(), 192)) == 2);

  SECTION("a longer prompt over the same head anchors the longest line counted twice") {
    const auto longer = parted(p, 100, 2);  // 300 tokens, shares lines up to 192
    const admission_plan plan = a.plan(longer, cold());
    CHECK(plan.chunks == every_line(g, 288));
    CHECK(plan.anchors == lines{192});
  }
}

TEST_CASE("a session's first long request anchors the last 4 lines below its user message", "[admission]") {
  disk_admission a = small_policy();
  admission_request r = cold();
  r.first_request = true;
  r.user_start = 150;  // lines at or below it: ..., 96, 112, 128, 144
  const admission_plan plan = a.plan(ids(200), r);
  CHECK(plan.chunks == every_line(g, 192));
  CHECK(plan.anchors == lines{96, 112, 128, 144});

  SECTION("a user start on a line counts that line") {
    r.user_start = 144;
    CHECK(a.plan(ids(200, 3), r).anchors == lines{96, 112, 128, 144});
  }
  SECTION("near the start only the lines that exist") {
    r.user_start = 40;
    CHECK(a.plan(ids(200, 3), r).anchors == lines{16, 32});
  }
  SECTION("no anchors without the flag or without a user start") {
    admission_request later = r;
    later.first_request = false;
    CHECK(a.plan(ids(200, 4), later).anchors.empty());
    admission_request unknown = r;
    unknown.user_start.reset();
    CHECK(a.plan(ids(200, 5), unknown).anchors.empty());
  }
}

TEST_CASE("a branch gets an anchor at the line where the prompts part", "[admission]") {
  disk_admission a = small_policy();
  const auto head = ids(100);                // lines 16 .. 96 shared, 4 more tokens too
  const auto first = parted(head, 100, 2);   // 200 tokens
  const auto second = parted(head, 100, 3);  // the same 100, then another 100
  REQUIRE(a.plan(first, cold()).anchors.empty());
  const admission_plan plan = a.plan(second, cold());
  // Line 96 is shared; line 112 differs (its chunk holds 4 shared and 12 new ids). Line 96 is
  // also the longest line counted twice here, so the section below tells the rules apart.
  CHECK(plan.anchors == lines{96});

  SECTION("a branch below the longest line counted twice") {
    disk_admission b = small_policy();
    b.plan(first, cold());
    b.plan(first, cold());  // 192 of `first` now counted twice
    const admission_plan again = b.plan(first, cold());
    CHECK(again.anchors == lines{192});
    const admission_plan branch = b.plan(second, cold());
    CHECK(branch.anchors == lines{96});
    // `first` once more: line 96 was last followed by `second`, so it is a branch again.
    CHECK(b.plan(first, cold()).anchors == lines{96, 192});
  }
}

TEST_CASE("prompts under min_tokens write nothing and count nothing", "[admission]") {
  disk_admission a;  // the defaults: 4,096 tokens
  admission_request r;
  r.grid = 1024;
  r.first_request = true;
  r.user_start = 3000;
  const auto short_prompt = ids(4095);
  for (int i = 0; i < 3; ++i) {
    const admission_plan plan = a.plan(short_prompt, r);
    CHECK(plan.writes_nothing());
    CHECK(plan.anchors.empty());
  }
  CHECK(a.size() == 0);

  const admission_plan at_min = a.plan(ids(4096), r);
  CHECK(at_min.chunks == lines{1024, 2048, 3072, 4096});
  CHECK(at_min.anchors == lines{1024, 2048});  // below the user message at 3000
}

TEST_CASE("nothing above the taint line is written or counted", "[admission]") {
  disk_admission a = small_policy();
  const auto p = ids(200);
  admission_request r = cold();
  r.taint = 100;  // lines up to 96 may be written
  r.first_request = true;
  r.user_start = 190;  // rule 2 would pick 144 .. 192, all above the taint
  const admission_plan plan = a.plan(p, r);
  CHECK(plan.chunks == every_line(g, 96));
  CHECK(plan.anchors.empty());
  CHECK(a.count_of(prefix_hash(p.data(), 112)) == 0);

  r.first_request = false;
  const admission_plan again = a.plan(p, r);
  CHECK(again.anchors == lines{96});  // counted twice, but only up to the taint

  SECTION("a taint on a line keeps that line") {
    r.taint = 96;
    CHECK(a.plan(p, r).chunks.back() == 96);
  }
  SECTION("a taint below the first line writes nothing") {
    r.taint = 15;
    CHECK(a.plan(p, r).writes_nothing());
  }
}

TEST_CASE("nothing at or below the resume point is written or counted", "[admission]") {
  disk_admission a = small_policy();
  const auto p = ids(200);
  admission_request r = cold();
  r.resume = 96;  // line 96 is cached: the prefill forwards 112 .. 192
  r.first_request = true;
  r.user_start = 150;  // rule 2 picks 96 .. 144; 96 is not forwarded
  const admission_plan plan = a.plan(p, r);
  CHECK(plan.chunks == every_line(112, 192));
  CHECK(plan.anchors == lines{112, 128, 144});
  CHECK(a.count_of(prefix_hash(p.data(), 96)) == 0);

  SECTION("a resume off the grid forwards the line above it") {
    r.resume = 100;
    r.first_request = false;
    const admission_plan off = a.plan(p, r);
    CHECK(off.chunks == every_line(112, 192));
    CHECK(off.anchors == lines{192});  // counted twice, from the first plan
  }
  SECTION("a prompt resumed at its last line writes nothing") {
    r.resume = 192;
    CHECK(a.plan(p, r).writes_nothing());
  }
  SECTION("a line counted twice but cached gets no anchor") {
    disk_admission b = small_policy();
    b.plan(p, cold());
    b.plan(p, cold());
    admission_request resumed = cold();
    resumed.resume = 192;
    const admission_plan longer = b.plan(parted(p, 100, 2), resumed);
    CHECK(longer.chunks == every_line(208, 288));
    CHECK(longer.anchors.empty());
  }
}

TEST_CASE("the counting map stays within its capacity and forgets the oldest", "[admission]") {
  disk_admission a = small_policy(8);
  CHECK(a.capacity() == 8);
  const auto p = ids(200);  // 12 lines
  a.plan(p, cold());
  CHECK(a.size() == 8);
  // The newest 8 lines (80 .. 192) are kept; 16 .. 64 are forgotten.
  CHECK(a.count_of(prefix_hash(p.data(), 64)) == 0);
  CHECK(a.count_of(prefix_hash(p.data(), 80)) == 1);
  CHECK(a.count_of(prefix_hash(p.data(), 192)) == 1);
  for (int s = 2; s < 20; ++s) {
    a.plan(ids(200, s), cold());
    CHECK(a.size() <= 8);
  }
  CHECK(a.count_of(prefix_hash(p.data(), 192)) == 0);  // forgotten: a third plan counts 1
  CHECK(a.plan(p, cold()).anchors.empty());

  a.clear();
  CHECK(a.size() == 0);
  CHECK_THROWS_AS(disk_admission(disk_admission_options{64, 0, 4}), std::invalid_argument);
  admission_request bad = cold();
  bad.grid = 0;
  CHECK_THROWS_AS(a.plan(p, bad), std::invalid_argument);
}

TEST_CASE("right after each image the prefill forwards: a chunk and an anchor, off the grid or on it",
          "[admission][image]") {
  // ids(200) with an image's rows at [from, to): its first text row after it is `to`.
  auto with_image = [](std::size_t from, std::size_t to) {
    auto t = ids(200);
    for (std::size_t i = from; i < to; ++i) t[i] = testing::image_row_id(7, i - from);
    return t;
  };
  auto with_line = [](lines l, std::size_t b) {
    l.push_back(b);
    std::sort(l.begin(), l.end());
    return l;
  };
  {
    disk_admission a = small_policy();
    const admission_plan plan = a.plan(with_image(40, 60), cold());  // ends at 60, off the grid
    CHECK(plan.chunks == with_line(every_line(g, 192), 60));
    CHECK(plan.anchors == lines{60});
    CHECK(a.count_of(prefix_hash(with_image(40, 60).data(), 60)) == 0);  // rule 4 counts nothing
  }
  {
    disk_admission a = small_policy();
    const admission_plan plan = a.plan(with_image(40, 64), cold());  // ends on the grid line 64
    CHECK(plan.chunks == every_line(g, 192));
    CHECK(plan.anchors == lines{64});
  }
  {
    disk_admission a = small_policy();
    auto two = with_image(40, 60);
    for (std::size_t i = 100; i < 130; ++i) two[i] = testing::image_row_id(8, i - 100);
    const admission_plan plan = a.plan(two, cold());
    CHECK(plan.chunks == with_line(with_line(every_line(g, 192), 60), 130));
    CHECK(plan.anchors == (lines{60, 130}));
  }
  {
    // Resumed at or past the image's end, or tainted below it: the line is not this prefill's.
    disk_admission a = small_policy();
    admission_request resumed = cold();
    resumed.resume = 60;
    CHECK(a.plan(with_image(40, 60), resumed).anchors.empty());
    admission_request tainted = cold();
    tainted.taint = 59;
    const admission_plan t = a.plan(with_image(40, 60), tainted);
    CHECK(t.chunks == every_line(g, 48));
    CHECK(t.anchors.empty());
    resumed.resume = 59;  // a fresh policy: the plans above counted the grid lines (rule 1)
    disk_admission fresh = small_policy();
    const admission_plan r = fresh.plan(with_image(40, 60), resumed);
    CHECK(r.chunks == with_line(every_line(64, 192), 60));
    CHECK(r.anchors == lines{60});
  }
  {
    // Under min_tokens: nothing, images or not.
    disk_admission a = small_policy();
    auto short_prompt = with_image(40, 60);
    short_prompt.resize(63);
    CHECK(a.plan(short_prompt, cold()).writes_nothing());
  }
}
