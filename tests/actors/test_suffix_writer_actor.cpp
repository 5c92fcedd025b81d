// The suffix store's writer actor on the deterministic scheduler: it opens the store when it
// starts and sends the first snapshot; each add comes back as a delta (or a snapshot after a
// rebuild) the board's view installs, and the lookup source then proposes what an earlier request
// wrote; a clear answers with an empty snapshot.
#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <vector>

#include "actors/suffix_writer.hpp"
#include "runtime/speculative/suffix_lookup.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/suffix_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

struct updates {
  std::vector<suffix_update> got;
};

// Stands for the board: keeps every suffix_update.
suffix_receiver::behavior_type board_stand_in(suffix_receiver::pointer, std::shared_ptr<updates> into) {
  return {[into](suffix_update_atom, suffix_update& u) { into->got.push_back(std::move(u)); }};
}

// Asks the writer to clear, keeps the reply.
caf::behavior clear_asker(caf::event_based_actor* self, suffix_writer_actor writer,
                          std::shared_ptr<std::optional<suffix_update>> into) {
  self->request(writer, caf::infinite, clear_atom::value).then([into](suffix_update& u) {
    *into = std::move(u);
  });
  return {[](int) {}};
}

suffix_ids_ptr ids(std::vector<token_id> v) {
  return std::make_shared<const std::vector<token_id>>(std::move(v));
}

}  // namespace

TEST_CASE("the suffix writer's snapshots and deltas let the view propose an earlier request's ids",
          "[actors][suffix]") {
  temp_dir dir("anchorage-suffix-writer");
  caf_fixture f;
  auto seen = std::make_shared<updates>();
  auto board = f.spawn(board_stand_in, seen);
  auto writer =
      f.spawn(suffix_writer, suffix_options(dir.str(), 0x5eedf00dULL, /*rebuild_min_ids=*/16), board);
  f.sched->run();
  REQUIRE(seen->got.size() == 1);  // opened: the first snapshot, empty
  REQUIRE(seen->got[0].snapshot);
  CHECK(seen->got[0].stats.enabled);
  CHECK(seen->got[0].stats.ids == 0);

  suffix_lookup lookup;
  auto install = [&](const suffix_update& u) {
    if (u.snapshot) lookup.view().install(u.snapshot);
    if (u.delta) lookup.view().extend(*u.delta);
  };
  install(seen->got[0]);

  caf::anon_send(writer, suffix_add_atom::value, ids({5, 6, 7, 8, 9}));
  f.sched->run();
  REQUIRE(seen->got.size() == 2);
  CHECK(seen->got[1].delta);  // 5 ids: below the batch, no rebuild
  CHECK_FALSE(seen->got[1].snapshot);
  CHECK(seen->got[1].stats.ids == 5);
  install(seen->got[1]);
  const std::vector<token_id> recent = {1, 6, 7};
  lookup_source& source = lookup;
  CHECK(source.propose(recent.data(), recent.size(), 2) == std::vector<token_id>{8, 9});

  // 20 more ids pass the batch: a rebuild, so a snapshot (the view's tail is dropped).
  std::vector<token_id> longer;
  for (token_id t = 100; t < 120; ++t) longer.push_back(t);
  caf::anon_send(writer, suffix_add_atom::value, ids(longer));
  f.sched->run();
  REQUIRE(seen->got.size() == 3);
  REQUIRE(seen->got[2].snapshot);
  CHECK(seen->got[2].stats.rebuilds == 2);  // the open's and this one
  CHECK(seen->got[2].stats.indexed_ids == 25);
  install(seen->got[2]);
  CHECK(lookup.view().ids() == 25);
  CHECK(source.propose(recent.data(), recent.size(), 2) == std::vector<token_id>{8, 9});
  const std::vector<token_id> later = {110, 111};
  CHECK(source.propose(later.data(), later.size(), 3) == std::vector<token_id>{112, 113, 114});

  // A clear: an empty snapshot in the reply.
  auto cleared = std::make_shared<std::optional<suffix_update>>();
  f.spawn(clear_asker, writer, cleared);
  f.sched->run();
  REQUIRE(*cleared);
  REQUIRE((*cleared)->snapshot);
  CHECK((*cleared)->stats.ids == 0);
  install(**cleared);
  CHECK(source.propose(later.data(), later.size(), 3).empty());
}

TEST_CASE("a suffix writer spawned before its board tells it what the store holds when it subscribes",
          "[actors][suffix]") {
  temp_dir dir("anchorage-suffix-writer-sub");
  caf_fixture f;
  auto seen = std::make_shared<updates>();
  // As the server does: the writer first, with no board, and an add it writes meanwhile.
  auto writer = f.spawn(suffix_writer, suffix_options(dir.str(), 0x5eedf00dULL, /*rebuild_min_ids=*/16),
                        suffix_receiver{});
  caf::anon_send(writer, suffix_add_atom::value, ids({5, 6, 7, 8, 9}));
  f.sched->run();
  auto board = f.spawn(board_stand_in, seen);
  f.sched->run();
  CHECK(seen->got.empty());  // nobody subscribed: nothing sent

  caf::anon_send(writer, suffix_subscribe_atom::value, caf::actor_cast<suffix_receiver>(board));
  f.sched->run();
  REQUIRE(seen->got.size() == 1);  // the store as it is: a snapshot holding the add
  REQUIRE(seen->got[0].snapshot);
  CHECK(seen->got[0].stats.enabled);
  CHECK(seen->got[0].stats.ids == 5);
  suffix_lookup lookup;
  lookup.view().install(seen->got[0].snapshot);
  const std::vector<token_id> recent = {1, 6, 7};
  lookup_source& source = lookup;
  CHECK(source.propose(recent.data(), recent.size(), 2) == std::vector<token_id>{8, 9});

  caf::anon_send(writer, suffix_add_atom::value, ids({40, 41, 42}));
  f.sched->run();
  REQUIRE(seen->got.size() == 2);  // later adds go to the subscriber
  CHECK(seen->got[1].stats.ids == 8);
}
