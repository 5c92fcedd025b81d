#pragma once
// The shared tier's HTTP tests' view of a replica (tests/http/test_http_remote*.cpp).
#include "tests/support/http_fixture.hpp"

namespace anchorage::testing {

// The disk tier's stats once every write and push is done (quiesce drains both); they must
// carry the remote level's counters.
inline json disk_stats_of(const http_server& s) {
  REQUIRE(s.quiesce());
  const json d = s.get("/v1/cache/stats").body_json()["tiers"]["disk"];
  INFO(d.dump());
  REQUIRE(d.contains("remote"));
  return d;
}

}  // namespace anchorage::testing
