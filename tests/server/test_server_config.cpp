// Server flags, the JSON config file and --help.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>

#include "runtime/server/server_config.hpp"

using namespace anchorage;

TEST_CASE("defaults serve the small model on 127.0.0.1:8080", "[config]") {
  const auto c = parse_server_args({});
  CHECK(c.host == "127.0.0.1");
  CHECK(c.port == 8080);
  CHECK(c.engine.preset == "small");
  CHECK(c.served_model_name == "anchorage");
  CHECK(c.engine.config().grid == 1024);
  CHECK(c.engine.config().ctx_size == 131072);
  CHECK_FALSE(c.no_cache);
  // The device tiers' served defaults (docs/CACHES.md, "Budgets"): 2.5 GiB resident, a 2 GiB store
  // of entries up to 1 GiB, the end anchor and end alignment on.
  CHECK(c.cache.resident_bytes == 2560ULL << 20);
  CHECK(c.cache.store_bytes == 2048ULL << 20);
  CHECK(c.cache.store_entry_bytes == 1024ULL << 20);
  CHECK(c.cache.end_anchor);
  CHECK(c.cache.end_align);
}

TEST_CASE("the cache flags take sizes in GiB and switches", "[config]") {
  const auto c = parse_server_args({"--resident-gb", "0.5", "--cache-budget-gb=1", "--store-entry-gb", "0.25",
                                    "--end-anchor=off", "--end-align=false"});
  CHECK(c.cache.resident_bytes == 512ULL << 20);
  CHECK(c.cache.store_bytes == 1024ULL << 20);
  CHECK(c.cache.store_entry_bytes == 256ULL << 20);
  CHECK_FALSE(c.cache.end_anchor);
  CHECK_FALSE(c.cache.end_align);
  CHECK(parse_server_args({"--end-anchor"}).cache.end_anchor);
  CHECK(parse_server_args({"--resident-gb", "0"}).cache.resident_bytes == 0);
  CHECK_THROWS_WITH(parse_server_args({"--resident-gb", "-1"}), Catch::Contains("--resident-gb"));
  CHECK_THROWS_WITH(parse_server_args({"--cache-budget-gb", "lots"}), Catch::Contains("--cache-budget-gb"));
  CHECK_THROWS_WITH(parse_server_args({"--end-anchor=maybe"}), Catch::Contains("--end-anchor"));
  const auto i = parse_server_args({"--resident-guest-max", "1000", "--resident-stash-gb", "0.5",
                                    "--resident-pin-gb=1", "--resident-park-gb", "2", "--parallel", "3"});
  CHECK(i.cache.guest_max == 1000);
  CHECK(i.cache.stash_bytes == 512ULL << 20);
  CHECK(i.cache.pin_bytes == 1024ULL << 20);
  CHECK(i.cache.park_bytes == 2048ULL << 20);
  CHECK(i.cache.parallel == 3);
  const auto d = parse_server_args({});
  CHECK(d.cache.guest_max == 8192);
  CHECK(d.cache.stash_bytes == 1024ULL << 20);
  CHECK(d.cache.pin_bytes == 4096ULL << 20);
  CHECK(d.cache.park_bytes == 4096ULL << 20);
  CHECK(d.cache.parallel == 2);  // the default: docs/SERVER.md says why
  CHECK_THROWS_WITH(parse_server_args({"--parallel", "0"}), Catch::Contains("--parallel"));
}

TEST_CASE("flags keep the seed's spelling and check their values", "[config]") {
  const auto c = parse_server_args({"--preset", "tiny", "--prefix-chunk", "64", "--ctx-size=2048", "--port",
                                    "0", "--served-model-name", "m", "--no-cache", "--max-queue", "3"});
  CHECK(c.engine.config().grid == 64);
  CHECK(c.engine.config().ctx_size == 2048);
  CHECK(c.port == 0);
  CHECK(c.served_model_name == "m");
  CHECK(c.no_cache);
  CHECK(c.max_queue == 3);
  CHECK(c.reasoning_budget == -1);
  CHECK(parse_server_args({"--reasoning-budget", "512"}).reasoning_budget == 512);
  CHECK(parse_server_args({"--reasoning-budget=0"}).reasoning_budget == 0);
  CHECK(parse_server_args({"--reasoning-budget", "-1"}).reasoning_budget == -1);
  // The compaction worker's flags (docs/COMPACTION.md): the seed's defaults, seconds with fractions.
  CHECK(c.compaction_idle_s == 30);
  CHECK(c.compaction_min_tokens == 32768);
  CHECK(c.compaction_max_tokens == 2048);
  const auto w = parse_server_args(
      {"--compaction-idle-s", "0.25", "--compaction-min-tokens", "100", "--compaction-max-tokens", "64"});
  CHECK(w.compaction_idle_s == 0.25);
  CHECK(w.compaction_min_tokens == 100);
  CHECK(w.compaction_max_tokens == 64);
  CHECK(parse_server_args({"--compaction-idle-s", "0"}).compaction_idle_s == 0);
  CHECK_THROWS_WITH(parse_server_args({"--compaction-idle-s", "-1"}), Catch::Contains("--compaction-idle-s"));
  CHECK_THROWS_WITH(parse_server_args({"--compaction-idle-s", "soon"}), Catch::Contains("seconds"));
  CHECK_THROWS_WITH(parse_server_args({"--compaction-max-tokens", "0"}),
                    Catch::Contains("--compaction-max-tokens"));
  CHECK_THROWS_WITH(parse_server_args({"--reasoning-budget", "-2"}), Catch::Contains("--reasoning-budget"));
  CHECK_THROWS_WITH(parse_server_args({"--reasoning-budget", "lots"}), Catch::Contains("--reasoning-budget"));
  CHECK_THROWS_WITH(parse_server_args({"--port", "http"}), Catch::Contains("--port"));
  CHECK_THROWS_WITH(parse_server_args({"--bogus"}), Catch::Contains("unknown flag --bogus"));
  CHECK_THROWS_WITH(parse_server_args({"--port"}), Catch::Contains("needs a value"));
  CHECK_THROWS_WITH(parse_server_args({"--preset", "tiny", "--prefix-chunk", "40"}),
                    Catch::Contains("multiple of 16"));
  CHECK_THROWS_WITH(parse_server_args({"--preset", "nope"}), Catch::Contains("unknown model preset"));
  // Where images are encoded (docs/IMAGES.md): the vision encoder's thread unless asked.
  CHECK(c.vision_encoder_thread);
  CHECK_FALSE(parse_server_args({"--vision-encoder", "board"}).vision_encoder_thread);
  CHECK(parse_server_args({"--vision-encoder=thread"}).vision_encoder_thread);
  CHECK_THROWS_WITH(parse_server_args({"--vision-encoder", "gpu"}), Catch::Contains("--vision-encoder"));
}

TEST_CASE("a config file sets the same keys as the flags, and flags win", "[config]") {
  const auto path = std::filesystem::temp_directory_path() /
                    ("anchorage-cfg-" + std::to_string(std::random_device{}()) + ".json");
  {
    std::ofstream out(path);
    out << R"({"port": 9000, "preset": "tiny", "served-model-name": "from-file", "no-cache": true,
              "reasoning-budget": 2048, "resident-gb": 1.5, "end-anchor": false})";
  }
  const auto c = parse_server_args({"--served-model-name", "from-flag", "--config", path.string()});
  CHECK(c.port == 9000);
  CHECK(c.reasoning_budget == 2048);
  CHECK(c.cache.resident_bytes == 1536ULL << 20);
  CHECK_FALSE(c.cache.end_anchor);
  CHECK(c.engine.preset == "tiny");
  CHECK(c.served_model_name == "from-flag");
  CHECK(c.no_cache);
  {
    std::ofstream out(path);
    out << R"({"colour": "blue"})";
  }
  CHECK_THROWS_WITH(parse_server_args({"--config", path.string()}), Catch::Contains("unknown key 'colour'"));
  {
    std::ofstream out(path);
    out << "{not json";
  }
  CHECK_THROWS_WITH(parse_server_args({"--config", path.string()}), Catch::Contains("not JSON"));
  std::filesystem::remove(path);
}

TEST_CASE("the help text lists every flag", "[config]") {
  CHECK(parse_server_args({"--help"}).help);
  const std::string h = server_help();
  for (const char* f : {"--host",
                        "--port",
                        "--preset",
                        "--prefix-chunk",
                        "--ctx-size",
                        "--cache-dir",
                        "--no-cache",
                        "--served-model-name",
                        "--admin-token",
                        "--config",
                        "--max-queue",
                        "--ledger",
                        "--trace",
                        "--reasoning-budget",
                        "--resident-gb",
                        "--end-anchor",
                        "--end-align",
                        "--cache-budget-gb",
                        "--store-entry-gb",
                        "--resident-guest-max",
                        "--resident-stash-gb",
                        "--resident-pin-gb",
                        "--resident-park-gb",
                        "--response-cache-mb",
                        "--parallel"})
    CHECK_THAT(h, Catch::Contains(f));
}

TEST_CASE("the response cache is off unless --response-cache-mb gives it memory", "[config][response]") {
  CHECK(parse_server_args({}).cache.response_cache_bytes == 0);
  CHECK(parse_server_args({"--response-cache-mb", "16"}).cache.response_cache_bytes == 16ULL << 20);
  CHECK(parse_server_args({"--response-cache-mb=0"}).cache.response_cache_bytes == 0);
  CHECK_THROWS_WITH(parse_server_args({"--response-cache-mb", "-1"}), Catch::Contains("--response-cache-mb"));
  CHECK_THROWS_WITH(parse_server_args({"--response-cache-mb", "0.5"}),
                    Catch::Contains("--response-cache-mb"));
  CHECK_THROWS_WITH(parse_server_args({"--response-cache-mb"}), Catch::Contains("--response-cache-mb"));
}

TEST_CASE("the tokenizer flag names a tokenizer.json, the byte tokenizer is the default",
          "[config][tokenizer]") {
  CHECK(parse_server_args({}).tokenizer_path.empty());
  CHECK(parse_server_args({"--tokenizer", "/models/q/tokenizer.json"}).tokenizer_path ==
        "/models/q/tokenizer.json");
  CHECK_THROWS_AS(parse_server_args({"--tokenizer"}), std::invalid_argument);
  CHECK_THAT(server_help(), Catch::Contains("--tokenizer"));
}

namespace {
// Sets (or unsets, on null) an environment variable for one scope, and puts it back.
struct scoped_env {
  std::string name;
  std::optional<std::string> old;
  scoped_env(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    if (value)
      ::setenv(n, value, 1);
    else
      ::unsetenv(n);
  }
  ~scoped_env() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};
}  // namespace

TEST_CASE("the suffix store's flags, its size refused at 0 and below, and where it lives",
          "[config][suffix]") {
  const auto d = parse_server_args({});
  CHECK(d.suffix.enabled);
  CHECK(d.suffix.store.cap_bytes == 192ULL << 20);
  const auto c = parse_server_args({"--suffix-store", "off", "--suffix-store-mb", "64"});
  CHECK_FALSE(c.suffix.enabled);
  CHECK(c.suffix.store.cap_bytes == 64ULL << 20);
  CHECK(parse_server_args({"--suffix-store-mb=0.5"}).suffix.store.cap_bytes == 512ULL << 10);
  for (const char* bad : {"0", "-1", "x"})
    CHECK_THROWS_WITH(parse_server_args({"--suffix-store-mb", bad}),
                      Catch::Contains("--suffix-store-mb wants a size in MiB above 0"));
  CHECK_THROWS_WITH(parse_server_args({"--suffix-store", "maybe"}), Catch::Contains("--suffix-store"));
  CHECK_THAT(server_help(), Catch::Contains("--suffix-store-mb"));

  std::string why;
  scoped_env xdg("XDG_CACHE_HOME", "/x/cache");
  scoped_env home("HOME", "/h/me");
  CHECK(suffix_store_dir(parse_server_args({"--cache-dir", "/nvme/a"}), why) == "/nvme/a/suffix");
  CHECK(suffix_store_dir(parse_server_args({}), why) == "/x/cache/anchorage/suffix");
  CHECK(why.empty());
  {
    scoped_env no_xdg("XDG_CACHE_HOME", nullptr);
    CHECK(suffix_store_dir(parse_server_args({}), why) == "/h/me/.cache/anchorage/suffix");
    scoped_env no_home("HOME", nullptr);
    CHECK(suffix_store_dir(parse_server_args({}), why).empty());
    CHECK_THAT(why, Catch::Contains("HOME"));
  }
  CHECK(suffix_store_dir(parse_server_args({"--cache-dir", "/nvme/a", "--no-cache"}), why).empty());
  CHECK_THAT(why, Catch::Contains("--no-cache"));
  CHECK(
      suffix_store_dir(parse_server_args({"--cache-dir", "/nvme/a", "--suffix-store", "off"}), why).empty());
  CHECK_THAT(why, Catch::Contains("--suffix-store off"));
}

TEST_CASE("the shared tier's flags: a Redis URL, a salt, a timeout, and the disk tier they need",
          "[config][remote]") {
  const server_config off = parse_server_args({"--cache-dir", "/nvme/a"});
  CHECK(off.remote_cache.empty());

  const server_config c =
      parse_server_args({"--cache-dir", "/nvme/a", "--remote-cache", "redis://:pw@10.0.0.7:6390/3",
                         "--cache-salt", "team-a", "--remote-timeout-ms", "500"});
  CHECK(c.remote_cache == "redis://:pw@10.0.0.7:6390/3");
  CHECK(c.remote.redis.host == "10.0.0.7");
  CHECK(c.remote.redis.port == 6390);
  CHECK(c.remote.redis.db == 3);
  CHECK(c.remote.redis.password == "pw");
  CHECK(c.remote.redis.timeout_ms == 500);
  CHECK(c.remote.disk.fetch_deadline_ms == 500);
  CHECK(c.remote.redis.ns == remote_namespace("team-a"));
  // The salt's order among the flags does not matter; no salt is the plain namespace.
  CHECK(parse_server_args({"--cache-salt", "team-a", "--remote-cache", "redis://h", "--cache-dir", "/d"})
            .remote.redis.ns == c.remote.redis.ns);
  CHECK(parse_server_args({"--remote-cache", "redis://h", "--cache-dir", "/d"}).remote.redis.ns ==
        "anchorage");

  CHECK_THROWS_WITH(parse_server_args({"--cache-dir", "/d", "--remote-cache", "http://h:6379"}),
                    Catch::Contains("--remote-cache") && Catch::Contains("redis://"));
  CHECK_THROWS_WITH(parse_server_args({"--remote-cache", "redis://h"}), Catch::Contains("--cache-dir"));
  CHECK_THROWS_WITH(
      parse_server_args({"--remote-cache", "redis://h", "--cache-dir", "/d", "--disk-cache-gb", "0"}),
      Catch::Contains("disk tier"));
  CHECK_THROWS_WITH(parse_server_args({"--cache-dir", "/d", "--remote-timeout-ms", "0"}),
                    Catch::Contains("remote-timeout-ms"));
  // --no-cache turns every tier off, the shared one with them: no error.
  CHECK_NOTHROW(parse_server_args({"--remote-cache", "redis://h", "--no-cache"}));
  const std::string h = server_help();
  for (const char* f : {"--remote-cache", "--cache-salt", "--remote-timeout-ms"})
    CHECK_THAT(h, Catch::Contains(f));
}
