// GET /v1/cache/holdings' body (runtime/server/holdings.hpp) from a stats object and a disk
// entry list: sessions by digest with their token counts, from the slots and the spill; the
// disk's prefixes; never a session id or a word of text.
#include <catch2/catch.hpp>

#include "runtime/server/holdings.hpp"

using namespace anchorage;
using json = nlohmann::json;

TEST_CASE("holdings list sessions by digest and token counts, never their ids or text", "[holdings]") {
  const json stats = {
      {"slots",
       {{{"slot", 0}, {"resident_tokens", 4100}, {"session", "header:ses_secret"}, {"end_anchor", 4096}},
        {{"slot", 1}, {"resident_tokens", 0}, {"session", nullptr}, {"end_anchor", nullptr}},
        {{"slot", 2}, {"resident_tokens", 300}, {"session", "c0123456789abcdef"}, {"end_anchor", 290}}}},
      {"tiers",
       {{"spill",
         {{"conversations",
           {{{"id", "00000000000000ab"},
             {"session", "other-session"},
             {"tokens", 9000},
             {"end_anchor", 8990}}}}}},
        {"disk", {{"remote", {{"enabled", true}, {"namespace", "anchorage:ff"}}}}}}}};
  const json entries = {
      {"total", 3},
      {"entries",
       {{{"key", "0123456789abcdef"}, {"tokens", 2048}, {"bytes", 10}, {"hits", 2}, {"value", 1.5}},
        {{"key", "fedcba9876543210"}, {"tokens", 1024}, {"bytes", 5}, {"hits", 0}}}}};
  const json h = holdings_of(stats, entries);
  const std::string text = h.dump();
  CHECK(text.find("ses_secret") == std::string::npos);
  CHECK(text.find("other-session") == std::string::npos);

  REQUIRE(h["sessions"].size() == 3);  // the empty slot is not listed
  CHECK(h["sessions"][0] == json{{"session", session_digest("ses_secret")},
                                 {"keyed_by", "header"},
                                 {"tokens", 4100},
                                 {"end_anchor", 4096},
                                 {"where", "slot"},
                                 {"slot", 0}});
  CHECK(h["sessions"][1]["session"].is_null());  // a conversation without a session id
  CHECK(h["sessions"][1]["keyed_by"] == "messages");
  CHECK(h["sessions"][1]["tokens"] == 300);
  CHECK(h["sessions"][2] == json{{"session", session_digest("other-session")},
                                 {"keyed_by", "prompt_cache_key"},
                                 {"tokens", 9000},
                                 {"end_anchor", 8990},
                                 {"where", "spill"},
                                 {"conversation", "00000000000000ab"}});
  CHECK(h["prefixes"]["total"] == 3);
  REQUIRE(h["prefixes"]["entries"].size() == 2);
  CHECK(h["prefixes"]["entries"][0] ==
        json{{"key", "0123456789abcdef"}, {"tokens", 2048}, {"bytes", 10}, {"hits", 2}});
  CHECK(h["shared"] == json{{"enabled", true}, {"namespace", "anchorage:ff"}});

  SECTION("the digest is XXH3-64 of the id, as 16 hex digits (what a balancer computes)") {
    CHECK(session_digest("") == "2d06800538d394c2");
    CHECK(session_digest("ses_secret").size() == 16);
    CHECK(session_digest("a") != session_digest("b"));
  }
  SECTION("no disk tier, no spill, no remote level") {
    const json bare = holdings_of({{"slots", json::array()}, {"tiers", json::object()}}, nullptr);
    CHECK(bare["sessions"].empty());
    CHECK(bare["prefixes"] == json{{"total", 0}, {"entries", json::array()}});
    CHECK(bare["shared"] == json{{"enabled", false}, {"namespace", nullptr}});
  }
}
