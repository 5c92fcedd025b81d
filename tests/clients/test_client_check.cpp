// Live client checks (issue 24, part 4): tools/client-check installs a real agent client from npm at
// a pinned version, starts build/anchorage (the built-in random model) behind a recording proxy,
// drives a 3-turn headless session and prints one JSON line per request the server served, then a
// summary. Each case runs it for one client and asserts that the client completed every turn
// without an error and that every follow-up main turn (every main request after the first)
// resumed from a tier with at least 80% of its prompt cached, and that every answer's usage
// reported resumed_at as its cached tokens. docs/CLIENTS.md has the figures measured.
//
// Hidden ([.][clients]): each case takes minutes of CPU and needs npm's registry. A case skips
// (WARN, then return) only when npm cannot reach its registry, the script's exit status 77.
// Run one with: build/tests/anchorage_tests "[.][clients]" (or "[.][clients][claude-code]").
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.hpp"

using json = nlohmann::json;
using anchorage::testing::temp_dir;

namespace {

const std::string source_dir = ANCHORAGE_SOURCE_DIR;

// build/anchorage beside this test binary's folder (build/tests/anchorage_tests), unless
// ANCHORAGE_BINARY names another.
std::string server_binary() {
  if (const char* env = std::getenv("ANCHORAGE_BINARY"); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = self.parent_path().parent_path() / "anchorage";
    if (std::filesystem::exists(beside)) return beside.string();
  }
  return source_dir + "/build/anchorage";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// j[key], or null when j has no such key (a const json's operator[] must not be asked for one).
json field(const json& j, const char* key) { return j.is_object() && j.contains(key) ? j.at(key) : json(); }

std::string tail(const std::string& text, std::size_t n) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

struct check_run {
  int status = -1;
  std::vector<json> requests;  // one per request the server served
  json summary;                // the last line
  std::string stdout_text, stderr_text;
};

check_run run_client_check(const std::string& client) {
  temp_dir dir("anchorage-client-check");
  const std::string out = dir.file("stdout.jsonl"), err = dir.file("stderr.log");
  const std::string cmd = "'" + source_dir + "/tools/client-check' " + client + " --binary '" +
                          server_binary() + "' --out '" + dir.file("run") + "' >'" + out + "' 2>'" + err +
                          "'";
  const int raw = std::system(cmd.c_str());
  check_run r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.stdout_text = read_file(out);
  r.stderr_text = read_file(err);
  std::istringstream lines(r.stdout_text);
  for (std::string line; std::getline(lines, line);) {
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    if (j.value("summary", false))
      r.summary = j;
    else
      r.requests.push_back(j);
  }
  return r;
}

// The checks every client shares; false when the case was skipped.
bool check_client(const std::string& client) {
  const check_run r = run_client_check(client);
  INFO("tools/client-check " << client << " exited " << r.status);
  INFO("summary: " << r.summary.dump());
  INFO("stderr (tail): " << tail(r.stderr_text, 3000));
  if (r.status == 77) {
    WARN("skipped: " << r.summary.value("reason", std::string("npm cannot reach its registry")));
    return false;
  }
  REQUIRE(r.summary.is_object());
  CHECK(r.status == 0);
  CHECK(field(r.summary, "ok") == true);
  CHECK(field(r.summary, "client_errors") == json::array());
  CHECK(field(r.summary, "http_errors") == json::array());
  // The usage every answer reported as cached (cache_read_input_tokens, cached_tokens) is resumed_at.
  CHECK(field(r.summary, "usage_mismatches") == json::array());

  // Every generation request was answered; the main turns' figures are the ones the summary used.
  int mains = 0;
  for (const json& q : r.requests) {
    INFO("request: " << q.dump());
    const std::string kind = q.value("kind", std::string());
    if (kind == "other" || kind == "count_tokens") continue;
    CHECK(field(q, "status") == 200);
    if (kind != "main") continue;
    ++mains;
    const json prompt = field(q, "prompt_tokens"), resumed = field(q, "resumed_at"),
               prefilled = field(q, "prefilled");
    REQUIRE(prompt.is_number());
    REQUIRE(resumed.is_number());
    REQUIRE(prefilled.is_number());
    CHECK(prompt.get<long>() > 0);
    CHECK(resumed.get<long>() + prefilled.get<long>() == prompt.get<long>());
  }
  CHECK(mains >= 3);  // one per turn at least

  const json turns = field(r.summary, "main_turns");
  REQUIRE(turns.is_array());
  REQUIRE(field(r.summary, "followups").is_number());
  CHECK(field(r.summary, "followups").get<int>() >= 2);  // 3 turns: at least two follow-ups
  for (const json& t : turns) {
    if (field(t, "follow_up") != true) continue;
    INFO("follow-up main turn: " << t.dump());
    const json source = field(t, "source"), cached = field(t, "cached_fraction");
    CHECK(source.is_string());
    CHECK(source != "cold");
    REQUIRE(cached.is_number());
    CHECK(cached.get<double>() >= 0.8);
    CHECK(field(t, "ok") == true);
  }
  return true;
}

}  // namespace

TEST_CASE("clients: claude-code completes a 3-turn session and every follow-up resumes from a tier",
          "[.][clients][claude-code]") {
  check_client("claude-code");
}

TEST_CASE("clients: qwen-code completes a 3-turn session and every follow-up resumes from a tier",
          "[.][clients][qwen-code]") {
  check_client("qwen-code");
}

TEST_CASE("clients: opencode completes a 3-turn session and every follow-up resumes from a tier",
          "[.][clients][opencode]") {
  check_client("opencode");
}

// Codex CLI speaks only the Responses API: against a server without POST /v1/responses the script
// exits 78 and this case fails, naming that route.
TEST_CASE("clients: codex completes a 3-turn session and every follow-up resumes from a tier",
          "[.][clients][codex]") {
  check_client("codex");
}
