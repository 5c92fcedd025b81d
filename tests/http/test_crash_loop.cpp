// Crash loops (issue 29): tools/crash-loop kills the real server binary with SIGKILL while one of
// its writers (the disk tier, the session spill, generation checkpoints, the suffix store) is
// writing, restarts it on the same --cache-dir and checks what the restart finds: no .tmp left
// once the start-up scans ran, no damaged file, every restore verified (a planted bit flip
// refused and counted), every answer equal to a cache-less server's. The tool prints one JSON
// summary per writer; these tests run it and read the summaries.
//
// The short loop (3 kills per writer) runs with the suite; the 100-kill loops are hidden:
//   build/tests/anchorage_tests "[crash]"
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "tests/support/process_probe.hpp"
#include "tests/support/temp_dir.hpp"

using anchorage::testing::command_run;
using anchorage::testing::run_command;
using anchorage::testing::temp_dir;
using json = nlohmann::json;

namespace {

struct crash_loop_run {
  int exit_code = -1;
  std::map<std::string, json> kinds;  // the summary of each writer, by kind
  json total;                         // the last line: every kind together
  std::string output;                 // stdout, for the failure message
};

// Runs tools/crash-loop on the server binary built beside this test binary; its progress goes to
// a log file in `out`, its JSON lines are read here.
// Under AddressSanitizer (the sanitizer pass builds the server with it too) a memory error in a
// server still stops it (halt_on_error), but its leak report at a stop is off: a server killed or
// stopped in the middle of its work holds what it held, and the loop counts any exit code of a
// stopped server that is not 0 as a violation.
#if defined(__SANITIZE_ADDRESS__) || defined(ANCHORAGE_TESTS_UNDER_ASAN)
constexpr const char* server_env = "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 ";
#else
constexpr const char* server_env = "";
#endif

crash_loop_run run_crash_loop(const std::string& kind, int iterations, int seed, int corrupt_every,
                              const std::string& out, const std::string& extra = {}) {
  const std::string command = std::string(server_env) + "python3 -B '" + ANCHORAGE_SOURCE_DIR +
                              "/tools/crash-loop' --binary '" + ANCHORAGE_SERVER_BINARY + "' --kind " + kind +
                              " --iterations " + std::to_string(iterations) + " --seed " +
                              std::to_string(seed) + " --corrupt-every " + std::to_string(corrupt_every) +
                              " " + extra + " --out '" + out + "' 2> '" + out + "/crash-loop.log'";
  const command_run ran = run_command(command);
  crash_loop_run run;
  run.exit_code = ran.exit_code;
  run.output = ran.output;
  std::size_t start = 0;
  while (start < run.output.size()) {
    std::size_t end = run.output.find('\n', start);
    if (end == std::string::npos) end = run.output.size();
    const json line = json::parse(run.output.substr(start, end - start), nullptr, /*allow_exceptions=*/false);
    start = end + 1;
    if (!line.is_object()) continue;
    if (line.contains("kind"))
      run.kinds[line["kind"].get<std::string>()] = line;
    else
      run.total = line;
  }
  return run;
}

// The checks every writer's summary must pass.
void check_writer(const json& s, int iterations) {
  INFO(s.dump(1));
  CHECK(s["violations"].empty());
  CHECK(s["iterations"] == iterations);
  CHECK(s["kills"] == iterations);
  CHECK(s["tmp_after_start"] == 0);
  CHECK(s["answers"].get<long>() >= iterations);
  CHECK(s["answers_equal"] == s["answers"]);
  // The kills that left a .tmp: the start reaped them all (the suffix store's rewrite is reaped
  // without a count, so there the check is tmp_after_start's).
  if (s["kind"] != "suffix") CHECK(s["tmp_reaped_at_start"] >= s["tmp_left_by_kill"]);
  // A restore or read failure only where a byte was flipped on purpose.
  if (s["corruptions_planted"] == 0) {
    CHECK(s["restore_failures"] == 0);
    CHECK(s["read_failures"] == 0);
  }
  CHECK(s["damaged_at_start"] == 0);
}

bool have_python3() { return std::system("command -v python3 > /dev/null 2>&1") == 0; }

void run_writer_loop(const std::string& kind, int iterations, int corrupt_every) {
  REQUIRE(have_python3());
  REQUIRE(std::filesystem::exists(ANCHORAGE_SERVER_BINARY));
  temp_dir dir("anchorage-crash-" + kind);
  const crash_loop_run run = run_crash_loop(kind, iterations, 29, corrupt_every, dir.str());
  INFO("crash-loop stdout:\n" << run.output);
  CHECK(run.exit_code == 0);
  REQUIRE(run.kinds.count(kind) == 1);
  const json& s = run.kinds.at(kind);
  check_writer(s, iterations);
  // Most kills landed inside a write: a .tmp was still there once the process was dead.
  if (kind != "suffix") CHECK(s["tmp_left_by_kill"].get<long>() * 2 >= iterations);
  if (corrupt_every > 0 && (kind == "disk" || kind == "spill"))
    CHECK(s["corruptions_planted"].get<long>() > 0);
}

}  // namespace

TEST_CASE("crash loop: three kill -9s in each writer's writes leave no tmp and no wrong answer",
          "[http][crash]") {
  REQUIRE(have_python3());
  REQUIRE(std::filesystem::exists(ANCHORAGE_SERVER_BINARY));
  temp_dir dir("anchorage-crash");
  constexpr int iterations = 3;
  // A planted bit flip in the third disk and spill iteration: a restore that reads it refuses it.
  // Shorter prompts and decodes than the tool's defaults, to keep it short.
  const crash_loop_run run =
      run_crash_loop("all", iterations, 29, 3, dir.str(), "--prompt-chars 800 --decode-tokens 400");
  INFO("crash-loop stdout:\n" << run.output);
  CHECK(run.exit_code == 0);
  for (const char* kind : {"disk", "spill", "checkpoint", "suffix"}) {
    INFO("writer " << kind);
    REQUIRE(run.kinds.count(kind) == 1);
    check_writer(run.kinds.at(kind), iterations);
  }
  // At least one kill in the short loop lands inside a write (the disk's nearly always do).
  CHECK(run.total.value("kills_in_writes", 0L) >= 1);
}

TEST_CASE("crash loop: 100 kill -9s during disk-tier writes", "[.][crash]") {
  run_writer_loop("disk", 100, 10);
}

TEST_CASE("crash loop: 100 kill -9s during session spill writes", "[.][crash]") {
  run_writer_loop("spill", 100, 10);
}

TEST_CASE("crash loop: 100 kill -9s during generation checkpoints", "[.][crash]") {
  run_writer_loop("checkpoint", 100, 0);
}

TEST_CASE("crash loop: 100 kill -9s during suffix-store appends and rewrites", "[.][crash]") {
  run_writer_loop("suffix", 100, 0);
}
