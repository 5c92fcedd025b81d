// A ledger entry's JSON line (runtime/server/ledger.hpp): written and read back field for field;
// a miss's reason and tokens only when the request had one, and an unknown reason refused.
#include <catch2/catch.hpp>

#include "runtime/server/ledger.hpp"

using namespace anchorage;

namespace {

ledger_entry sample() {
  ledger_entry e;
  e.id = "chatcmpl-7";
  e.session_key = "header:A";
  e.route = request_kind::chat;
  e.prompt_tokens = 900;
  e.source = cache_source::resident;
  e.resumed_at = 768;
  e.prefilled = 132;
  e.slot = 1;
  e.output_tokens = 8;
  e.seed = 42;
  e.finish_reason = run_finish::length;
  return e;
}

}  // namespace

TEST_CASE("a ledger entry's miss reason is written and read back, and absent without one",
          "[server][ledger][miss]") {
  ledger_entry e = sample();
  const nlohmann::json plain = to_json(e);
  CHECK_FALSE(plain.contains("miss_reason"));
  CHECK_FALSE(plain.contains("miss_tokens"));
  CHECK_FALSE(ledger_entry_from_json(plain).miss);

  e.miss = miss_reason::client_rewrote;
  e.miss_tokens = 123;
  const nlohmann::json j = to_json(e);
  CHECK(j["miss_reason"] == "client_rewrote");
  CHECK(j["miss_tokens"] == 123);
  const ledger_entry back = ledger_entry_from_json(j);
  REQUIRE(back.miss);
  CHECK(*back.miss == miss_reason::client_rewrote);
  CHECK(back.miss_tokens == 123);
  CHECK(back.resumed_at == 768);
  CHECK(back.source == cache_source::resident);

  for (miss_reason r : all_miss_reasons) {
    e.miss = r;
    CHECK(ledger_entry_from_json(to_json(e)).miss == r);
  }
  nlohmann::json wrong = j;
  wrong["miss_reason"] = "bad_luck";
  CHECK_THROWS_AS(ledger_entry_from_json(wrong), std::invalid_argument);
}
