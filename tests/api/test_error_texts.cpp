// What a client is told for each error_code (protocol/error_code.hpp's describe()).
#include <catch2/catch.hpp>

#include <string>

#include "protocol/cache_source.hpp"
#include "protocol/error_code.hpp"

using namespace anchorage;

TEST_CASE("error codes: each has its status, OpenAI type and a message saying what to do", "[api][errors]") {
  const error_code_text off = describe(error_code::admin_disabled);
  CHECK(off.status == 403);
  CHECK(std::string(off.type) == "permission_error");
  CHECK(std::string(off.message) ==
        "admin routes are off: start the server with --admin-token or ANCHORAGE_ADMIN_TOKEN");
  CHECK(std::string(off.param).empty());

  const error_code_text wrong = describe(error_code::unauthorized);
  CHECK(wrong.status == 401);
  CHECK(std::string(wrong.type) == "authentication_error");
  CHECK(std::string(wrong.message) == "this route needs the admin token (Authorization: Bearer TOKEN)");
  CHECK(std::string(wrong.param).empty());

  const error_code_text tier = describe(error_code::unknown_tier);
  CHECK(tier.status == 400);
  CHECK(std::string(tier.type) == "invalid_request_error");
  CHECK(std::string(tier.param) == "tier");

  CHECK(describe(error_code::none).status == 500);
  for (error_code c :
       {error_code::none, error_code::admin_disabled, error_code::unauthorized, error_code::unknown_tier})
    CHECK(http_status(c) == describe(c).status);
}

TEST_CASE("error codes: the unknown tier message lists the tiers the admin accepts", "[api][errors]") {
  std::string listed;
  for (cache_tier t : {cache_tier::all, cache_tier::resident, cache_tier::store, cache_tier::disk,
                       cache_tier::spill, cache_tier::response, cache_tier::suffix}) {
    CHECK(cache_tier_from_string(to_string(t)) == t);
    listed += (listed.empty() ? "" : ", ") + std::string(to_string(t));
  }
  CHECK(std::string(describe(error_code::unknown_tier).message) == "unknown tier (" + listed + ")");
  // Tiers that do not exist are not accepted (nor named).
  for (const char* phantom : {"suffixes", "Suffix", "Response", "Resident", ""})
    CHECK_FALSE(cache_tier_from_string(phantom));
}
