// Many clients at once over HTTP (issue 13): with slots, a short request beside a long prefill
// answers first and on the other slot; with one slot it waits, and its wait is in the ledger and
// the metrics; the per-slot series are in /metrics.
#include <thread>

#include "tests/support/http_fixture.hpp"
#include "tests/support/http_helpers.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

json long_completion(std::size_t tokens) {
  json ids = json::array();
  for (std::size_t i = 0; i < tokens; ++i) ids.push_back(static_cast<int>(32 + (i * 7) % 90));
  return json{{"model", "anchorage"}, {"prompt", ids}, {"max_tokens", 4}, {"temperature", 0}};
}

json entry(const json& ledger, const std::string& prompt_kind, long prompt_tokens) {
  for (const json& e : ledger)
    if (e["prompt_tokens"].get<long>() == prompt_tokens) return e;
  FAIL("no ledger entry of " << prompt_kind);
  return {};
}

// A long completion on a thread; once it runs, a short one, whose reply is returned.
http_reply short_beside_long(const http_server& s, std::size_t long_tokens, http_reply& long_reply) {
  std::thread t([&] { long_reply = s.post_json("/v1/completions", long_completion(long_tokens)); });
  CHECK(s.wait_running(1));
  http_reply short_reply = s.post_json("/v1/completions", small_completion("Title:", 4));
  t.join();
  return short_reply;
}

// Both answered 200; the ledger of the two.
json both_answered(const http_server& s, std::size_t long_tokens) {
  http_reply long_reply;
  const http_reply short_reply = short_beside_long(s, long_tokens, long_reply);
  REQUIRE(short_reply.status == 200);
  REQUIRE(long_reply.status == 200);
  json ledger = s.ledger();
  REQUIRE(ledger.size() == 2);
  return ledger;
}

}  // namespace

TEST_CASE("http: a short request beside a long prefill answers first, on the other slot", "[http][slots]") {
  http_server s({"--parallel", "2", "--ctx-size", "32768"});
  const std::size_t long_tokens = 16 * 1024;
  const json ledger = both_answered(s, long_tokens);
  const json& first_done = ledger[0];
  CHECK(first_done["prompt_tokens"].get<long>() < 100);  // the short one finished first
  const json long_entry = entry(ledger, "the long prompt", static_cast<long>(long_tokens));
  CHECK(first_done["slot"] != long_entry["slot"]);
  CHECK(first_done["queue_ms"].get<double>() < long_entry["total_ms"].get<double>());
  const std::string m = s.get("/metrics").body;
  CHECK(m.find("anchorage_slot_resident_tokens{slot=\"1\"}") != std::string::npos);
  CHECK(m.find("anchorage_slot_busy{slot=\"0\"} 0") != std::string::npos);
  CHECK(m.find("anchorage_queue_wait_seconds_count 2") != std::string::npos);
}

TEST_CASE("http: with one slot the second request waits, and the wait is recorded", "[http][slots]") {
  http_server s({"--parallel", "1", "--ctx-size", "32768"});
  const std::size_t long_tokens = 8 * 1024;
  const json ledger = both_answered(s, long_tokens);
  CHECK(ledger[0]["prompt_tokens"].get<long>() ==
        static_cast<long>(long_tokens));  // first come, first served
  CHECK(ledger[1]["slot"] == 0);
  // The short request waited for most of the long one.
  CHECK(ledger[1]["queue_ms"].get<double>() > 0.5 * ledger[0]["total_ms"].get<double>() - 50);
  CHECK(s.get("/v1/cache/stats").body_json()["queue"]["slots"] == 1);
}
