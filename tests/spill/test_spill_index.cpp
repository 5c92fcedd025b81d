// The spill's catalog alone (runtime/spill/spill_index.hpp): refs, pins, dead files, bytes.
#include <catch2/catch.hpp>

#include <algorithm>

#include "runtime/spill/spill_index.hpp"

using namespace anchorage;

namespace {

spill_manifest named(std::uint64_t id, std::vector<std::uint64_t> blocks,
                     std::vector<std::uint64_t> anchors) {
  spill_manifest m;
  m.id = id;
  for (auto b : blocks) m.blocks.push_back({b, 0, 0, {}});
  for (auto a : anchors) m.anchors.push_back({a, 0, false, {}});
  return m;
}

constexpr spill_file_key blk(std::uint64_t n) { return {spill_file_kind::block, n}; }
constexpr spill_file_key anc(std::uint64_t n) { return {spill_file_kind::anchor, n}; }

bool has(const std::vector<spill_file_key>& v, spill_file_key k) {
  return std::find(v.begin(), v.end(), k) != v.end();
}

}  // namespace

TEST_CASE("the spill catalog counts refs and pins and reports the files left unneeded", "[spill]") {
  spill_index ix;
  for (std::uint64_t n : {1, 2, 3}) REQUIRE(ix.add_file(blk(n), 100, true));
  REQUIRE(ix.add_file(anc(1), 10, true));  // another family: the same number is another file
  CHECK_FALSE(ix.add_file(blk(1), 100, true));
  CHECK(ix.held_bytes() == 310);
  CHECK(ix.present_count(spill_file_kind::block) == 3);

  CHECK(ix.install(named(7, {1, 2}, {1}), std::vector<unsigned char>(5), 1).empty());
  CHECK(ix.install(named(8, {1, 3}, {}), std::vector<unsigned char>(6), 2).empty());
  CHECK(ix.held_bytes() == 321);
  CHECK(ix.file(blk(1))->refs == 2);
  CHECK(ix.manifests_naming(blk(1)) == std::vector<std::uint64_t>{7, 8});

  // Replacing 7 by a version that drops block 2: block 2 is dead, block 1 is not.
  const auto dead = ix.install(named(7, {1}, {1}), std::vector<unsigned char>(4), 3);
  CHECK(dead.size() == 1);
  CHECK(has(dead, blk(2)));
  CHECK(ix.file(blk(1))->refs == 2);
  ix.erase_file(blk(2));
  CHECK(ix.held_bytes() == 100 + 100 + 10 + 4 + 6);

  // A pin keeps a file through the removal of every manifest naming it.
  ix.pin(blk(3));
  CHECK(ix.remove_manifest(8).size() == 0);  // block 3 pinned, block 1 still named by 7
  CHECK_FALSE(ix.dead(blk(3)));
  CHECK(ix.unpin(blk(3)));
  const auto gone = ix.remove_manifest(7);
  CHECK(has(gone, blk(1)));
  CHECK(has(gone, anc(1)));
  CHECK(ix.manifest_count() == 0);

  // A file in flight counts apart until it is renamed into place.
  REQUIRE(ix.add_file(blk(9), 50, false));
  CHECK(ix.held(blk(9)));
  CHECK_FALSE(ix.present(blk(9)));
  CHECK(ix.in_flight_bytes() == 50);
  CHECK_FALSE(ix.dead(blk(9)));  // not present: never dead
  ix.set_present(blk(9));
  CHECK(ix.in_flight_bytes() == 0);
  CHECK(ix.unpin(blk(9)));  // the writer's pin was its only hold
}

TEST_CASE("the spill catalog orders manifests by last use", "[spill]") {
  spill_index ix;
  ix.install(named(1, {}, {}), {}, 5);
  ix.install(named(2, {}, {}), {}, 3);
  ix.install(named(3, {}, {}), {}, 9);
  auto order = ix.by_last_use();
  REQUIRE(order.size() == 3);
  CHECK(order[0]->manifest.id == 2);
  CHECK(order[2]->manifest.id == 3);
  ix.set_last_use(2, 10);
  CHECK(ix.by_last_use().back()->manifest.id == 2);
  ix.clear_present();
  CHECK(ix.manifest_count() == 0);
  CHECK(ix.held_bytes() == 0);
}
