// The soak (issue 29): tools/soak runs a mixed load in the captured clients' shapes (opencode,
// Qwen Code, Claude Code, the Responses API, bad requests, probes) on the real server binary,
// with planned restarts and cache clears, and checks every answer (200 in its route's shape, a
// 4xx with a JSON error, or 429; a bad request refused) and, per life of the server, the resident
// memory and open descriptors from the end of its warm-up to its end. These tests run it and
// read its JSON summary.
//
// The short soak (45 s, a restart, clears) runs with the suite, its memory bound loose (a real
// leak under load still shows); the half-hour soak is hidden:
//   build/tests/anchorage_tests "[soak]"
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/process_probe.hpp"
#include "tests/support/temp_dir.hpp"

using anchorage::testing::command_run;
using anchorage::testing::run_command;
using anchorage::testing::temp_dir;
using json = nlohmann::json;

namespace {

// Under AddressSanitizer freed blocks wait in a quarantine and under ThreadSanitizer every
// access has shadow memory, so the resident set is not judged there; under ASan a server's leak
// report at its planned stop is off (the tool counts a stop's exit code that is not 0 as a
// violation).
#if defined(__SANITIZE_ADDRESS__) || defined(ANCHORAGE_TESTS_UNDER_ASAN)
constexpr const char* server_env = "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 ";
constexpr const char* memory_flag = " --no-memory-check";
#elif defined(__SANITIZE_THREAD__)
constexpr const char* server_env = "";
constexpr const char* memory_flag = " --no-memory-check";
#else
constexpr const char* server_env = "";
constexpr const char* memory_flag = "";
#endif

struct soak_run {
  int exit_code = -1;
  json summary;
  std::string output;
};

soak_run run_soak(const std::string& out, const std::string& flags) {
  const std::string command = std::string(server_env) + "python3 -B '" + ANCHORAGE_SOURCE_DIR +
                              "/tools/soak' --binary '" + ANCHORAGE_SERVER_BINARY + "' --out '" + out + "' " +
                              flags + memory_flag + " 2> '" + out + "/soak.log'";
  std::filesystem::create_directories(out);
  const command_run ran = run_command(command);
  soak_run run;
  run.exit_code = ran.exit_code;
  run.output = ran.output;
  run.summary = json::parse(run.output, nullptr, /*allow_exceptions=*/false);
  return run;
}

long count_of(const json& s, const std::string& shape_route_status) {
  return s["counts"].value(shape_route_status, 0L);
}

void check_soak(const soak_run& run, int restarts) {
  INFO("soak stdout:\n" << run.output);
  REQUIRE(run.summary.is_object());
  const json& s = run.summary;
  CHECK(s["violations"].empty());
  CHECK(run.exit_code == 0);
  CHECK(s["restarts"] == restarts);
  CHECK(s["clears"].get<long>() >= 1);
  CHECK(s["counts"].value("operator /v1/cache/clear 200", 0L) == s["clears"].get<long>());
  // Every shape was served, and every bad request refused.
  CHECK(count_of(s, "opencode /v1/chat/completions 200") > 0);
  CHECK(count_of(s, "qwen-code /v1/chat/completions 200") > 0);
  CHECK(count_of(s, "claude-code /v1/messages 200") > 0);
  CHECK(count_of(s, "responses /v1/responses 200") > 0);
  CHECK(count_of(s, "probes /health 200") > 0);
  long bad = 0, bad_refused = 0;
  for (const auto& [key, n] : s["counts"].items()) {
    if (key.rfind("bad ", 0) != 0) continue;
    bad += n.get<long>();
    const std::string status = key.substr(key.rfind(' ') + 1);
    if (status.size() == 3 && status[0] == '4') bad_refused += n.get<long>();
  }
  CHECK(bad > 0);
  CHECK(bad_refused == bad);
  // Only 200, 4xx and 429 came back.
  for (const auto& [status, n] : s["by_status"].items()) {
    INFO("status " << status);
    CHECK((status == "200" || (status.size() == 3 && status[0] == '4')));
  }
  // Each life was judged: its quiet points sampled, descriptors back where they were.
  REQUIRE(s["lives"].size() == static_cast<std::size_t>(restarts + 1));
  for (const json& life : s["lives"]) {
    INFO(life.dump());
    REQUIRE(life.contains("fds_end_quiet"));
    CHECK(life["fds_end_quiet"].get<long>() <= life["fds_warm_quiet"].get<long>() + 4);
  }
}

bool have_python3() { return std::system("command -v python3 > /dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("soak: a short mixed load with a restart and clears answers every request in shape",
          "[http][soak]") {
  REQUIRE(have_python3());
  REQUIRE(std::filesystem::exists(ANCHORAGE_SERVER_BINARY));
  temp_dir dir("anchorage-soak");
  // Two lives of about 20 s, each with a 6 s warm-up, the server trimming every 2 s (each quiet
  // point waits for a trim); a memory bound a leak under load would still cross (the server's
  // resident set is about 240-500 MiB on the tiny preset).
  const soak_run run = run_soak(dir.str(),
                                "--minutes 0.75 --restart-every-s 22 --clear-every-s 10 --warmup-s 6 "
                                "--sample-s 0.5 --clients 6 --rss-growth-mb 120 --memory-trim-s 2");
  check_soak(run, 1);
}

TEST_CASE("soak: thirty minutes of mixed load, resident memory and descriptors flat", "[.][soak]") {
  REQUIRE(have_python3());
  REQUIRE(std::filesystem::exists(ANCHORAGE_SERVER_BINARY));
  temp_dir dir("anchorage-soak-long");
  const soak_run run = run_soak(dir.str(), "--minutes 30");
  check_soak(run, 2);
}
