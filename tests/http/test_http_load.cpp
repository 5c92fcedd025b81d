// The edge under load, on a whole `--preset tiny` server (docs/EDGE.md): concurrent streaming
// clients each get 200 or the conductor's 429 with a JSON body, never a reset or a hang; slow
// and half-sent connections do not starve /health or a new request; the header, body and size
// limits answer with their status. The short cases run in CI; the [.] ones are the sizes.
#include "tests/support/http_helpers.hpp"
#include "tools/load_client.hpp"

namespace anchorage::testing {
namespace {

std::string stream_request(int max_tokens) {
  return load::post("/v1/completions", json{{"prompt", "Hello there, how are you"},
                                            {"max_tokens", max_tokens},
                                            {"temperature", 0},
                                            {"stream", true}}
                                           .dump());
}

struct tally {
  int ok = 0, busy = 0, other = 0, resets = 0, hangs = 0, bad_body = 0;
};

tally count(const std::vector<load::outcome>& all) {
  tally t;
  for (const load::outcome& o : all) {
    if (o.what == load::outcome::kind::reset || o.what == load::outcome::kind::no_connect) {
      ++t.resets;
      continue;
    }
    if (o.what == load::outcome::kind::timed_out) {
      ++t.hangs;
      continue;
    }
    if (o.status == 200) {
      ++t.ok;
      if (!o.stream_done) ++t.bad_body;
    } else if (o.status == 429) {
      ++t.busy;
      if (!o.json_body) ++t.bad_body;
    } else {
      ++t.other;
    }
  }
  return t;
}

// /health probed every 20 ms while `work` runs; the slowest answer in ms (a failed probe: 1e9).
double health_while(int port, const std::function<void()>& work) {
  std::atomic<bool> done{false};
  double worst = 0;
  std::thread probe([&] {
    while (!done) {
      const load::outcome o = load::exchange(port, load::get("/health"), 10000);
      worst = std::max(worst, o.status == 200 ? o.total_ms : 1e9);
      std::this_thread::sleep_for(20ms);
    }
  });
  work();
  done = true;
  probe.join();
  return worst;
}

void concurrent_streams(int clients, int max_queue) {
  http_server s({"--max-queue", std::to_string(max_queue)});
  std::vector<load::outcome> all;
  const double worst_health =
      health_while(s.port(), [&] { all = load::concurrent(s.port(), clients, stream_request(8), 60000); });
  const tally t = count(all);
  INFO("clients " << clients << ": 200 " << t.ok << ", 429 " << t.busy << ", other " << t.other << ", resets "
                  << t.resets << ", hangs " << t.hangs << ", bad bodies " << t.bad_body << "; worst /health "
                  << worst_health << " ms");
  CHECK(t.ok + t.busy == clients);
  CHECK(t.resets == 0);
  CHECK(t.hangs == 0);
  CHECK(t.bad_body == 0);
  CHECK(t.ok >= 1);
  CHECK(worst_health < 1000);  // the bound is 100 ms; a loaded CI box gets slack
  expect_valid_completion(s);
}

TEST_CASE("http load: concurrent streaming clients get 200 or 429, never a reset", "[http][load]") {
  concurrent_streams(48, 4);
}

TEST_CASE("http load: 256 concurrent streaming clients", "[http][load][.]") { concurrent_streams(256, 16); }

void slow_connections(int k) {
  http_server s({"--http-header-timeout-s", "60"});
  const load::outcome before =
      load::exchange(s.port(), load::post("/v1/completions", small_completion().dump()), 60000);
  REQUIRE(before.status == 200);
  load::slow_pool slow(s.port(), k, 2000ms);
  REQUIRE(slow.opened() == k);
  std::vector<double> health;
  for (int i = 0; i < 10; ++i) {
    const load::outcome o = load::exchange(s.port(), load::get("/health"), 10000);
    REQUIRE(o.status == 200);
    health.push_back(o.total_ms);
  }
  const load::outcome during =
      load::exchange(s.port(), load::post("/v1/completions", small_completion().dump()), 60000);
  INFO("completion before " << before.total_ms << " ms, with " << k << " slow connections " << during.total_ms
                            << " ms; /health worst " << *std::max_element(health.begin(), health.end())
                            << " ms");
  CHECK(during.status == 200);
  CHECK(during.json_body);
  CHECK(*std::max_element(health.begin(), health.end()) < 500);
  CHECK(during.total_ms < before.total_ms * 3 + 500);
  CHECK(slow.alive() == k);  // held, not dropped: the header deadline is 60 s here
}

TEST_CASE("http load: slow connections do not starve /health or a completion", "[http][load]") {
  slow_connections(100);
}

TEST_CASE("http load: 500 slow connections", "[http][load][.]") { slow_connections(500); }

TEST_CASE("http load: the edge's limits answer with their status", "[http][load]") {
  http_server s({"--http-header-timeout-s", "1", "--http-max-header-kb", "8", "--max-body-mb", "1"});
  SECTION("headers too large: 431 with a JSON body") {
    const std::string big = "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a') +
                            "\r\nConnection: close\r\n\r\n";
    const load::outcome o = load::exchange(s.port(), big, 10000);
    CHECK(o.status == 431);
    CHECK(o.json_body);
  }
  SECTION("headers too slow: closed with 408 within the deadline") {
    const load::steady::time_point t0 = load::steady::now();
    load::slow_pool slow(s.port(), 5, 300ms);
    while (slow.alive() > 0 && load::ms_since(t0) < 10000) std::this_thread::sleep_for(20ms);
    CHECK(slow.alive() == 0);
    CHECK(load::ms_since(t0) < 3000);
  }
  SECTION("a body too large: 413 with a JSON body") {
    const load::outcome o =
        load::exchange(s.port(), load::post("/v1/completions", std::string(2 << 20, 'x')), 10000);
    CHECK(o.status == 413);
    CHECK(o.json_body);
  }
  expect_valid_completion(s);
}

}  // namespace
}  // namespace anchorage::testing
