// The live settings (runtime/server/live_settings.hpp, issue 26) end to end: GET and POST
// /v1/cache/settings, a lower disk budget evicting at once, the settings file across a restart,
// a flag given at start winning over it, and every refusal in the route's own JSON.
#include <filesystem>
#include <regex>

#include "tests/support/chat_turns.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

const httplib::Headers with_token = {{"X-Admin-Token", "secret"}};

json setting(const json& all, const std::string& key) {
  for (const json& s : all["settings"])
    if (s["key"] == key) return s;
  FAIL("no setting " << key);
  return {};
}

json long_messages(const std::string& user) {
  return json::array({{{"role", "system"}, {"content", filler(system_prompt, 1700)}},
                      {{"role", "user"}, {"content", user}}});
}

// Disk entries from two sessions with different heads (a session's first long request writes
// its anchors), every write committed.
json fill_disk(http_server& s) {
  post_turn(s, chat_body(long_messages("List the files in src."), 11, 4));
  json other = long_messages("Explain the build.");
  other[0]["content"] = "You are another agent. " + other[0]["content"].get<std::string>();
  post_turn(s, chat_body(other, 12, 4));
  REQUIRE(s.quiesce());
  return s.get("/v1/cache/stats").body_json()["tiers"]["disk"];
}

}  // namespace

TEST_CASE("http: GET /v1/cache/settings lists each live setting, its flag, and which this server has",
          "[http][settings]") {
  temp_dir dir("anchorage-http-settings");
  http_server s({"--cache-dir", dir.str(), "--disk-free-gb", "0"});
  const http_reply r = s.get("/v1/cache/settings");
  REQUIRE(r.status == 200);
  const json j = r.body_json();
  CHECK(j["file"] == dir.str() + "/settings.json");
  CHECK(j["saved"] == json::object());
  REQUIRE(j["settings"].size() == 7);
  CHECK(setting(j, "disk_cache_gb")["value"] == 50.0);
  CHECK(setting(j, "disk_cache_gb")["flag"] == "--disk-cache-gb");
  CHECK(setting(j, "disk_cache_gb")["unit"] == "GiB");
  CHECK(setting(j, "disk_cache_gb")["pinned"] == false);
  CHECK(setting(j, "disk_cache_gb")["available"] == true);
  CHECK(setting(j, "disk_lifetime_days")["value"] == 7.0);
  CHECK(setting(j, "disk_free_gb")["pinned"] == true);  // given at start
  CHECK(setting(j, "disk_free_gb")["value"] == 0.0);
  CHECK(setting(j, "session_spill_gb")["available"] == true);
  CHECK(setting(j, "resident_gb")["value"] == 2.5);
  CHECK(setting(j, "image_cache_mb")["value"] == 512.0);
  CHECK(setting(j, "image_cache_mb")["unit"] == "MiB");
  CHECK(setting(j, "image_cache_mb")["flag"] == "--image-cache-mb");

  // Without --cache-dir there is no disk tier and no spill, and nothing is saved.
  http_server bare;
  const json b = bare.get("/v1/cache/settings").body_json();
  CHECK(b["file"].is_null());
  CHECK(setting(b, "disk_cache_gb")["available"] == false);
  CHECK(setting(b, "session_spill_gb")["available"] == false);
  CHECK(setting(b, "cache_budget_gb")["available"] == true);
}

TEST_CASE("http: a setting is changed only with the admin token, and each bad change is refused in words",
          "[http][settings]") {
  temp_dir dir("anchorage-http-settings");
  {
    http_server off({"--cache-dir", dir.str()});  // no --admin-token: the admin routes are off
    const http_reply r = off.post_json("/v1/cache/settings", {{"disk_cache_gb", 1}}, with_token);
    CHECK(r.status == 403);
    CHECK(r.body_json()["error"]["type"] == "permission_error");
  }
  http_server s({"--cache-dir", dir.str(), "--admin-token", "secret", "--resident-gb", "1"});
  struct refusal {
    std::string body;
    httplib::Headers headers;
    int status;
    std::string says;
  };
  const std::vector<refusal> cases = {
      {R"({"disk_cache_gb": 1})", {}, 401, "admin token"},
      {R"({"disk_cache_gb": 1})", {{"X-Admin-Token", "wrong"}}, 401, "admin token"},
      {"{not json", with_token, 400, "not JSON"},
      {"[1, 2]", with_token, 400, "JSON object"},
      {"{}", with_token, 400, "JSON object"},
      {R"({"disk_cache_tb": 1})", with_token, 400, "unknown setting 'disk_cache_tb'"},
      {R"({"disk_cache_gb": "20"})", with_token, 400, "disk_cache_gb must be a number (GiB)"},
      {R"({"disk_cache_gb": -1})", with_token, 400, "disk_cache_gb must be from 0"},
      {R"({"disk_lifetime_days": 0})", with_token, 400, "disk_lifetime_days must be from"},
      {R"({"resident_gb": 2})", with_token, 409, "fixed by --resident-gb"},
      // One bad key refuses the whole change: nothing of it applies.
      {R"({"cache_budget_gb": 1, "disk_free_gb": null})", with_token, 400, "disk_free_gb must be a number"},
  };
  for (const refusal& c : cases) {
    INFO(c.body);
    const http_reply r = s.post("/v1/cache/settings", c.body, c.headers);
    CHECK(r.status == c.status);
    const json e = r.body_json()["error"];
    CHECK_THAT(e["message"].get<std::string>(), Catch::Contains(c.says));
  }
  const json now = s.get("/v1/cache/settings").body_json();
  CHECK(setting(now, "cache_budget_gb")["value"] == 2.0);
  CHECK(setting(now, "disk_cache_gb")["value"] == 50.0);
  CHECK_FALSE(std::filesystem::exists(dir.path / "settings.json"));
  // The token in the URL is refused as the other admin routes refuse it.
  CHECK(s.post("/v1/cache/settings?token=secret", R"({"disk_cache_gb": 1})").status == 400);
  // A server without a disk tier refuses the disk's settings.
  http_server bare({"--admin-token", "secret"});
  const http_reply r = bare.post_json("/v1/cache/settings", {{"disk_cache_gb", 1}}, with_token);
  CHECK(r.status == 400);
  CHECK_THAT(r.body_json()["error"]["message"].get<std::string>(), Catch::Contains("no such tier"));
  // Without --cache-dir a change applies but is not saved, and the answer says so.
  const http_reply kept = bare.post_json("/v1/cache/settings", {{"cache_budget_gb", 1}}, with_token);
  REQUIRE(kept.status == 200);
  CHECK(kept.body_json()["persisted"] == false);
  CHECK_THAT(kept.body_json()["warning"].get<std::string>(), Catch::Contains("no --cache-dir"));
  CHECK(bare.get("/v1/cache/stats").body_json()["tiers"]["store"]["limit_bytes"] == 1073741824);
}

TEST_CASE("http: a lower disk budget evicts at once, is kept across a restart, and a flag wins over it",
          "[http][settings][disk]") {
  temp_dir dir("anchorage-http-settings");
  const std::vector<std::string> flags = {"--cache-dir",   dir.str(), "--disk-min-tokens", "256",
                                          "--admin-token", "secret",  "--disk-free-gb",    "0"};
  std::uint64_t budget = 0;
  {
    http_server s(flags);
    const json before = fill_disk(s);
    REQUIRE(before["entries"].get<long>() >= 8);
    const std::uint64_t held = before["bytes"];
    // Half of what is held, in GiB as the flag counts.
    const double gb = static_cast<double>(held / 2) / 1073741824.0;
    const http_reply r =
        s.post_json("/v1/cache/settings", {{"disk_cache_gb", gb}, {"disk_lifetime_days", 2}}, with_token);
    REQUIRE(r.status == 200);
    const json j = r.body_json();
    CHECK(j["persisted"] == true);
    CHECK(setting(j, "disk_cache_gb")["value"] == gb);
    CHECK(j["saved"]["disk_lifetime_days"] == 2.0);
    // Evicted before the answer: the stats the answer leaves hold the new budget.
    const json d = s.get("/v1/cache/stats").body_json()["tiers"]["disk"];
    budget = d["limit_bytes"];
    CHECK(budget == static_cast<std::uint64_t>(gb * 1073741824.0));
    CHECK(d["bytes"].get<std::uint64_t>() <= budget);
    CHECK(d["bytes"].get<std::uint64_t>() > 0);  // the value rule keeps what fits
    CHECK(d["evictions"].get<long>() > before["evictions"].get<long>());
    CHECK(d["lifetime_s"] == 2 * 86400);
    CHECK(d["min_free_bytes"] == 0);
    CHECK(d["fs_free_bytes"].get<std::uint64_t>() > 0);
    const std::string metrics = s.get("/metrics").body;
    CHECK_THAT(metrics,
               Catch::Contains("anchorage_cache_limit_bytes{tier=\"disk\"} " + std::to_string(budget)));
  }
  {
    // A restart on the same folder: the saved values are in force.
    http_server s(flags);
    REQUIRE(s.quiesce());
    const json d = s.get("/v1/cache/stats").body_json()["tiers"]["disk"];
    CHECK(d["limit_bytes"] == budget);
    CHECK(d["lifetime_s"] == 2 * 86400);
    const json j = s.get("/v1/cache/settings").body_json();
    CHECK(setting(j, "disk_cache_gb")["pinned"] == false);
  }
  {
    // A flag given at start wins over the saved value, pins it, and the file keeps the saved one
    // for a start without the flag.
    std::vector<std::string> with_flag = flags;
    with_flag.insert(with_flag.end(), {"--disk-cache-gb", "3"});
    http_server s(with_flag);
    REQUIRE(s.quiesce());
    CHECK(s.get("/v1/cache/stats").body_json()["tiers"]["disk"]["limit_bytes"] == 3ULL << 30);
    const json j = s.get("/v1/cache/settings").body_json();
    CHECK(setting(j, "disk_cache_gb")["pinned"] == true);
    CHECK(setting(j, "disk_cache_gb")["value"] == 3.0);
    CHECK(setting(j, "disk_lifetime_days")["value"] == 2.0);  // not pinned: the saved one
    CHECK(s.post_json("/v1/cache/settings", {{"disk_cache_gb", 1}}, with_token).status == 409);
  }
}

TEST_CASE("http: lower device and spill budgets take effect at once", "[http][settings]") {
  temp_dir dir("anchorage-http-settings");
  http_server s({"--cache-dir", dir.str(), "--admin-token", "secret"});
  json messages = json::array({{{"role", "user"}, {"content", "List the files."}}});
  post_turn(s, greedy_turn(messages, 4));
  REQUIRE(s.quiesce());
  const json before = s.get("/v1/cache/stats").body_json()["tiers"];
  REQUIRE(before["resident"]["bytes"].get<std::uint64_t>() > 0);
  const http_reply r =
      s.post_json("/v1/cache/settings",
                  {{"resident_gb", 0}, {"cache_budget_gb", 0}, {"session_spill_gb", 0.5}}, with_token);
  REQUIRE(r.status == 200);
  const json t = s.get("/v1/cache/stats").body_json()["tiers"];
  CHECK(t["resident"]["limit_bytes"] == 0);
  CHECK(t["store"]["limit_bytes"] == 0);
  CHECK(t["store"]["bytes"] == 0);
  CHECK(t["spill"]["limit_bytes"] == 512ULL << 20);
}

TEST_CASE(
    "http: GET /v1/cache/disk/entries lists the disk's anchors most valuable first, hashes and numbers only",
    "[http][disk]") {
  temp_dir dir("anchorage-http-settings");
  http_server s({"--cache-dir", dir.str(), "--disk-min-tokens", "256"});
  const json d = fill_disk(s);
  const http_reply r = s.get("/v1/cache/disk/entries");
  REQUIRE(r.status == 200);
  const json j = r.body_json();
  CHECK(j["total"] == d["entries"]);
  REQUIRE(j["entries"].size() == d["entries"].get<std::size_t>());
  const std::size_t grid = static_cast<std::size_t>(s.config().model().grid);
  double last = 1e300;
  for (const json& e : j["entries"]) {
    INFO(e.dump());
    CHECK(e.size() == 6);
    CHECK(std::regex_match(e["key"].get<std::string>(), std::regex("[0-9a-f]{16}")));
    CHECK(e["tokens"].get<std::size_t>() % grid == 0);
    CHECK(e["bytes"].get<std::uint64_t>() > 0);
    CHECK(e["hits"] == 0);
    CHECK(e["age_s"].get<long>() >= 0);
    CHECK(e["value"].get<double>() <= last);
    last = e["value"];
  }
  // The anchor files are named by these keys.
  for (const json& e : j["entries"]) {
    bool named = false;
    for (auto& f : std::filesystem::recursive_directory_iterator(dir.path))
      named = named || f.path().filename().string().find(e["key"].get<std::string>()) != std::string::npos;
    CHECK(named);
  }
  const json one = s.get("/v1/cache/disk/entries?limit=1").body_json();
  CHECK(one["total"] == j["total"]);
  REQUIRE(one["entries"].size() == 1);
  CHECK(one["entries"][0] == j["entries"][0]);
  for (const char* bad : {"0", "1001", "x", "-1", "5x", ""}) {
    INFO(bad);
    const http_reply b = s.get(std::string("/v1/cache/disk/entries?limit=") + bad);
    CHECK(b.status == 400);
    CHECK(b.body_json()["error"]["param"] == "limit");
  }
  http_server bare;
  CHECK(bare.get("/v1/cache/disk/entries").status == 400);
}
