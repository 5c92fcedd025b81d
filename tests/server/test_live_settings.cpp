// The live settings (runtime/server/live_settings.hpp): what a change may name, the flags that
// pin a setting, the settings file written atomically and read back at start, and what a damaged
// or foreign file does (nothing: the server starts with its flags and defaults).
#include <catch2/catch.hpp>

#include <fstream>

#include "runtime/io/uring_env.hpp"
#include "runtime/server/live_settings.hpp"
#include "tests/support/fault_env.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using json = nlohmann::json;

namespace {

server_config config_in(const std::string& dir, std::vector<std::string> flags = {}) {
  std::vector<std::string> args = {"--preset", "tiny", "--cache-dir", dir};
  args.insert(args.end(), flags.begin(), flags.end());
  return parse_server_args(args);
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("a change names known settings of tiers this server has, in range, none pinned", "[settings]") {
  temp_dir dir("anchorage-live-settings");
  const live_settings s(config_in(dir.str(), {"--resident-gb", "1"}));
  cache_settings c;
  REQUIRE_FALSE(
      s.parse(json{{"disk_cache_gb", 0.5}, {"disk_lifetime_days", 0.5}, {"session_spill_gb", 0}}, c));
  CHECK(c.disk_budget_bytes == std::uint64_t{1} << 29);
  CHECK(c.disk_lifetime_s == 43200);
  CHECK(c.spill_budget_bytes == 0u);
  CHECK_FALSE(c.disk_free_bytes);
  CHECK_FALSE(c.store_bytes);
  CHECK(c.any_disk());
  CHECK(c.any_board());
  REQUIRE_FALSE(s.parse(json{{"image_cache_mb", 64}}, c));
  CHECK(c.image_cache_bytes == std::uint64_t{64} << 20);
  CHECK_FALSE(c.any_disk());
  CHECK(c.any_board());

  const auto pinned = s.parse(json{{"resident_gb", 2}}, c);
  REQUIRE(pinned);
  CHECK(pinned->code == error_code::setting_pinned);
  CHECK(http_status(pinned->code) == 409);
  for (const json& bad :
       {json::array(), json::object(), json{{"x", 1}}, json{{"disk_free_gb", true}},
        json{{"disk_cache_gb", 2e6}}, json{{"disk_lifetime_days", 1e-9}}, json{{"image_cache_mb", -1}}}) {
    INFO(bad.dump());
    const auto r = s.parse(bad, c);
    REQUIRE(r);
    CHECK(r->code == error_code::bad_setting);
  }
  // --no-cache: no tier at all to set.
  const live_settings none(parse_server_args({"--preset", "tiny", "--no-cache"}));
  const auto r = none.parse(json{{"cache_budget_gb", 1}}, c);
  REQUIRE(r);
  CHECK_THAT(r->message, Catch::Contains("no such tier"));
  CHECK(none.parse(json{{"image_cache_mb", 1}}, c));
}

TEST_CASE("saved settings come back at start, a flag given wins, and the file keeps what it does not change",
          "[settings]") {
  temp_dir dir("anchorage-live-settings");
  uring_env env;
  {
    live_settings s(config_in(dir.str()));
    cache_settings c;
    REQUIRE_FALSE(s.parse(json{{"disk_cache_gb", 3}, {"cache_budget_gb", 0.25}}, c));
    s.apply(c);
    REQUIRE(s.save(env));
    REQUIRE_FALSE(s.parse(json{{"disk_free_gb", 1}}, c));
    s.apply(c);
    REQUIRE(s.save(env));
  }
  const json file = json::parse(std::ifstream(dir.str() + "/settings.json"));
  CHECK(file == json{{"disk_cache_gb", 3.0}, {"cache_budget_gb", 0.25}, {"disk_free_gb", 1.0}});

  server_config cfg = config_in(dir.str(), {"--disk-free-gb", "7"});
  const auto lines = apply_saved_settings(cfg, env);
  CHECK(lines.size() == 3);
  CHECK(cfg.disk.store.eviction.budget_bytes == 3ULL << 30);
  CHECK(cfg.cache.store_bytes == 1ULL << 28);
  CHECK(cfg.disk.store.eviction.min_free_bytes == 7ULL << 30);  // the flag, not the file
  const live_settings s(cfg);
  const json d = s.describe();
  for (const json& x : d["settings"])
    if (x["key"] == "disk_free_gb") {
      CHECK(x["pinned"] == true);
      CHECK(x["value"] == 7.0);
    }
  // A change made now keeps the file's value for the pinned setting.
  live_settings now(cfg);
  cache_settings c;
  REQUIRE_FALSE(now.parse(json{{"resident_gb", 1}}, c));
  now.apply(c);
  REQUIRE(now.save(env));
  const json again = json::parse(std::ifstream(dir.str() + "/settings.json"));
  CHECK(again["disk_free_gb"] == 1.0);
  CHECK(again["resident_gb"] == 1.0);
}

TEST_CASE("a damaged or foreign settings file is skipped with a line, never a failed start", "[settings]") {
  temp_dir dir("anchorage-live-settings");
  uring_env env;
  const std::string path = dir.str() + "/settings.json";
  const server_config defaults = config_in(dir.str());

  write_text(path, "{\"disk_cache_gb\": 3,");  // torn
  server_config a = defaults;
  auto lines = apply_saved_settings(a, env);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("not a JSON object"));
  CHECK(a.disk.store.eviction.budget_bytes == defaults.disk.store.eviction.budget_bytes);

  write_text(path, R"({"disk_cache_gb": -3, "port": 1, "resident_gb": "big", "cache_budget_gb": 1})");
  server_config b = defaults;
  lines = apply_saved_settings(b, env);
  CHECK(lines.size() == 4);
  CHECK(b.disk.store.eviction.budget_bytes == defaults.disk.store.eviction.budget_bytes);
  CHECK(b.port == defaults.port);
  CHECK(b.cache.resident_bytes == defaults.cache.resident_bytes);
  CHECK(b.cache.store_bytes == 1ULL << 30);  // the one good value

  // No --cache-dir, no file: nothing read, nothing said.
  server_config c = parse_server_args({"--preset", "tiny"});
  CHECK(apply_saved_settings(c, env).empty());
}

TEST_CASE("a settings file that cannot be written leaves the previous one whole", "[settings]") {
  temp_dir dir("anchorage-live-settings");
  uring_env base;
  fault_env env(base);
  live_settings s(config_in(dir.str()));
  cache_settings c;
  REQUIRE_FALSE(s.parse(json{{"disk_cache_gb", 3}}, c));
  s.apply(c);
  REQUIRE(s.save(env));
  REQUIRE_FALSE(s.parse(json{{"disk_cache_gb", 4}}, c));
  s.apply(c);
  env.no_space_after(8);
  const status r = s.save(env);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error(), Catch::Contains("settings.json"));
  CHECK(json::parse(std::ifstream(dir.str() + "/settings.json")) == json{{"disk_cache_gb", 3.0}});
  // The change is in force all the same (the actors applied it before the save).
  CHECK(s.values().disk_budget_bytes == 4ULL << 30);
}
