// The admin, the conductor and the board on CAF's deterministic scheduler: the clear route's
// tier names.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <optional>

#include "actors/admin.hpp"
#include "actors/board.hpp"
#include "actors/conductor.hpp"
#include "protocol/error_code.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

struct clear_answer {
  std::optional<std::string> json;
  std::optional<caf::error> error;
};

bool is_code(const std::optional<caf::error>& e, error_code c) {
  return e && e->category() == caf::atom("anchorage") && e->code() == static_cast<std::uint8_t>(c);
}

}  // namespace

TEST_CASE("clear answers a tier that does not exist here with unknown_tier, and clears the others",
          "[actors][admin]") {
  caf_fixture f;
  const model_config c = test_config("tiny", 1024);
  std::shared_ptr<engine> eng = make_engine(c);
  conductor_options opts;
  opts.limits.ctx_size = c.ctx_size;
  auto& sys = *f.sys;
  auto cond = f.spawn(conductor, opts, [&sys, eng](done_receiver self) {
    return sys.spawn(board, eng, board_options{}, self);
  });
  auto adm =
      f.spawn(admin, std::string("T"), cond, live_settings(server_config{}), std::shared_ptr<file_env>());

  auto clear = [&](const std::string& tier) {
    auto out = std::make_shared<clear_answer>();
    f.spawn(
        [adm, tier, out](caf::event_based_actor* self, int) -> caf::behavior {
          self->request(adm, caf::infinite, clear_atom::value, std::string("T"), tier)
              .then([out](std::string& s) { out->json = s; }, [out](caf::error& e) { out->error = e; });
          return {[](int) {}};
        },
        0);
    f.sched->run();
    return out;
  };

  // Phantom tiers (coming ones included), names no tier has, and the disk tier of a server
  // started without --cache-dir: nothing is cleared and the client is told.
  for (const char* tier : {"spill", "suffix", "response", "bogus", "", "Resident", "disk"}) {
    INFO("tier=" << tier);
    const auto a = clear(tier);
    CHECK_FALSE(a->json);
    CHECK(is_code(a->error, error_code::unknown_tier));
    CHECK(http_status(error_code::unknown_tier) == 400);
  }

  const auto all = clear("all");
  REQUIRE(all->json);
  const auto j = nlohmann::json::parse(*all->json);
  CHECK(j["tier"] == "all");
  CHECK(j["cleared"] == nlohmann::json::array({"resident", "store"}));

  const auto store = clear("store");
  REQUIRE(store->json);
  CHECK(nlohmann::json::parse(*store->json)["cleared"] == nlohmann::json::array({"store"}));
}

TEST_CASE("the conductor answers a clear with a typed clear_reply", "[actors][conductor]") {
  caf_fixture f;
  const model_config c = test_config("tiny", 1024);
  std::shared_ptr<engine> eng = make_engine(c);
  conductor_options opts;
  opts.limits.ctx_size = c.ctx_size;
  auto& sys = *f.sys;
  auto cond = f.spawn(conductor, opts, [&sys, eng](done_receiver self) {
    return sys.spawn(board, eng, board_options{}, self);
  });
  auto reply = std::make_shared<std::optional<clear_reply>>();
  auto error = std::make_shared<std::optional<caf::error>>();
  auto ask = [&](cache_tier t) {
    reply->reset();
    error->reset();
    f.spawn(
        [cond, t, reply, error](caf::event_based_actor* self, int) -> caf::behavior {
          self->request(cond, caf::infinite, clear_atom::value, t)
              .then([reply](const clear_reply& r) { *reply = r; }, [error](caf::error& e) { *error = e; });
          return {[](int) {}};
        },
        0);
    f.sched->run();
  };
  ask(cache_tier::all);
  REQUIRE(*reply);
  CHECK((*reply)->tier == cache_tier::all);
  CHECK((*reply)->cleared == std::vector<cache_tier>{cache_tier::resident, cache_tier::store});
  ask(cache_tier::resident);
  REQUIRE(*reply);
  CHECK((*reply)->cleared == std::vector<cache_tier>{cache_tier::resident});
  ask(cache_tier::disk);  // no disk tier on this server
  CHECK_FALSE(*reply);
  CHECK(is_code(*error, error_code::unknown_tier));
}
