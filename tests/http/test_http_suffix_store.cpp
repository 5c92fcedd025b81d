// End-to-end: the persistent suffix store in the server (issue 16). Each finished request's ids
// reach the store through the board and the writer actor; a conversation resending its growing
// prompt appends only what is new; the ids survive a restart on the same --cache-dir; the
// directory is 0700 and the log 0600; --suffix-store off makes nothing; a torn tail is cut at the
// next start and counted; stats, metrics and the clear route cover it.
#include <sys/stat.h>

#include <filesystem>
#include <thread>

#include "tests/support/chat_turns.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

constexpr std::uint64_t header_bytes = 32;  // runtime/suffix/suffix_log_format.hpp

std::vector<std::string> store_flags(const temp_dir& dir) {
  return {"--cache-dir",     dir.str(), "--suffix-store", "on",    "--disk-cache-gb", "0",
          "--session-spill", "off",     "--admin-token",  "secret"};
}

json conversation(const std::string& who) {
  return json::array({{{"role", "system"}, {"content", filler(who + " " + system_prompt, 600)}},
                      {{"role", "user"}, {"content", "List the files in " + who + "."}}});
}

// tiers.suffix once every add is written (the writer's counters come after the request's reply).
json suffix_now(const http_server& s) {
  REQUIRE(s.quiesce());
  const json j = s.get("/v1/cache/stats").body_json();
  REQUIRE(j.contains("tiers"));
  const json x = j["tiers"].value("suffix", json::object());
  REQUIRE(x.is_object());
  return x;
}

// Once the writer has opened the store and reported (its path is the log's).
json opened(const http_server& s) {
  const json x = suffix_now(s);
  CHECK((x.value("path", std::string()).find(".log") != std::string::npos || x.contains("refused")));
  return x;
}

json after_adds(const http_server& s, std::uint64_t adds) {
  const json x = suffix_now(s);
  CHECK(x.value("adds", std::uint64_t{0}) >= adds);
  return x;
}

std::uint64_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

std::uint64_t used_tokens(const turn_reply& t) {
  return t.usage["prompt_tokens"].get<std::uint64_t>() + t.usage["completion_tokens"].get<std::uint64_t>();
}

}  // namespace

TEST_CASE("http: finished requests' ids reach the suffix store, 0700 and 0600, and stay after a restart",
          "[http][suffix]") {
  temp_dir dir("anchorage-http-suffix");
  const std::string suffix_dir = dir.file("suffix");
  std::uint64_t ids = 0, bytes = 0;
  std::string path;
  {
    http_server s(store_flags(dir));
    const json first = opened(s);
    REQUIRE(first["enabled"] == true);
    CHECK(first["ids"] == 0);
    CHECK(first["bytes"] == header_bytes);
    path = first["path"];
    std::uint64_t used = 0;
    const char* who[] = {"alpha", "bravo", "charlie"};
    for (std::uint64_t k = 0; k < 3; ++k) {
      const turn_reply t = post_turn(s, greedy_turn(conversation(who[k]), 5));
      used += used_tokens(t);
      const json x = after_adds(s, k + 1);
      REQUIRE(x["adds"] == k + 1);
      // Every id of every request is either in the log or held by an earlier one (the three share
      // the template's head and most of the system prompt).
      CHECK(x["appended"].get<std::uint64_t>() + x["skipped"].get<std::uint64_t>() == used);
      CHECK(x["ids"] == x["appended"]);
      CHECK(x["bytes"].get<std::uint64_t>() > header_bytes + 4 * x["ids"].get<std::uint64_t>());
      CHECK(x["segments"] == k + 1);
      CHECK(x["write_failures"] == 0);
      if (k == 0) CHECK(x["skipped"] == 0);
      ids = x["ids"];
      bytes = x["bytes"];
    }
    CHECK(std::filesystem::file_size(path) == bytes);
    const std::string metrics = s.get("/metrics").body;
    CHECK_THAT(metrics, Catch::Contains("anchorage_suffix_store_ids " + std::to_string(ids) + "\n"));
    CHECK_THAT(metrics, Catch::Contains("anchorage_suffix_store_bytes " + std::to_string(bytes) + "\n"));
    CHECK_THAT(metrics, Catch::Contains("anchorage_suffix_lookups_total{hit=\"yes\"}"));
    CHECK_THAT(metrics, Catch::Contains("anchorage_suffix_lookups_total{hit=\"no\"}"));
    CHECK_THAT(metrics, !Catch::Contains("tier=\"suffix\""));
  }
  CHECK(mode_of(suffix_dir) == 0700);
  CHECK(mode_of(path) == 0600);
  CHECK(std::filesystem::path(path).parent_path() == std::filesystem::path(suffix_dir));
  {
    http_server again(store_flags(dir));
    const json x = opened(again);
    CHECK(x["enabled"] == true);
    CHECK(x["ids"] == ids);
    CHECK(x["bytes"] == bytes);
    CHECK(x["segments"] == 3);
    CHECK(x["torn_bytes_cut"] == 0);
    CHECK(x["appended"] == 0);
  }
}

TEST_CASE("http: a conversation resending its growing prompt appends only the new part", "[http][suffix]") {
  temp_dir dir("anchorage-http-suffix-agent");
  http_server s(store_flags(dir));
  opened(s);
  json messages = conversation("agent");
  std::uint64_t before_ids = 0, previous_used = 0;
  for (std::uint64_t turn = 1; turn <= 4; ++turn) {
    const turn_reply t = post_turn(s, greedy_turn(messages, 6));
    const std::uint64_t used = used_tokens(t);
    const json x = after_adds(s, turn);
    const std::uint64_t appended = x["ids"].get<std::uint64_t>() - before_ids;
    INFO("turn " << turn << ": " << used << " ids used, " << appended << " appended");
    if (turn == 1) {
      CHECK(appended == used);
    } else {
      // The new turn's ids (the reply echoed, the glue, the new message, the output), not the
      // whole prompt again.
      CHECK(appended <= used - previous_used + 8);
      CHECK(appended > 0);
      CHECK(appended * 4 < used);
      CHECK(x["segments"] == 1);  // one growing conversation is one segment
    }
    before_ids = x["ids"];
    previous_used = used;
    messages.push_back({{"role", "assistant"}, {"content", t.message.value("content", "")}});
    messages.push_back({{"role", "user"}, {"content", "Now read file " + std::to_string(turn) + "."}});
  }
}

TEST_CASE("http: --suffix-store off makes no directory, and the clear route empties the store",
          "[http][suffix]") {
  temp_dir dir("anchorage-http-suffix-off");
  const httplib::Headers admin = {{"Authorization", "Bearer secret"}};
  {
    std::vector<std::string> flags = store_flags(dir);
    flags[3] = "off";  // --suffix-store off
    http_server s(flags);
    post_turn(s, greedy_turn(conversation("off"), 4));
    const json x = suffix_now(s);
    CHECK(x["enabled"] == false);
    CHECK_FALSE(std::filesystem::exists(dir.file("suffix")));
    CHECK_THAT(s.get("/metrics").body, !Catch::Contains("anchorage_suffix_store_ids"));
    CHECK(s.post("/v1/cache/clear?tier=suffix", "", admin).status == 400);
  }
  http_server s(store_flags(dir));
  opened(s);
  post_turn(s, greedy_turn(conversation("clear"), 4));
  const json x = after_adds(s, 1);
  REQUIRE(x["ids"].get<std::uint64_t>() > 0);
  const http_reply r = s.post("/v1/cache/clear?tier=suffix", "", admin);
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["cleared"] == json::array({"suffix"}));
  const json y = suffix_now(s);
  CHECK(y["ids"] == 0);
  CHECK(y["bytes"] == header_bytes);
  CHECK(std::filesystem::file_size(y["path"].get<std::string>()) == header_bytes);
  // tier=all names it too; the same request is new again after the clear.
  post_turn(s, greedy_turn(conversation("clear"), 4));
  CHECK(after_adds(s, 2)["ids"] == x["ids"]);
  const http_reply all = s.post("/v1/cache/clear?tier=all", "", admin);
  REQUIRE(all.status == 200);
  const json cleared = all.body_json()["cleared"];
  CHECK(std::find(cleared.begin(), cleared.end(), json("suffix")) != cleared.end());
  CHECK(suffix_now(s)["ids"] == 0);
}

TEST_CASE("http: a torn tail of the suffix log is cut at the next start and counted", "[http][suffix]") {
  temp_dir dir("anchorage-http-suffix-torn");
  std::string path;
  std::uint64_t bytes = 0, ids = 0;
  {
    http_server s(store_flags(dir));
    opened(s);
    post_turn(s, greedy_turn(conversation("one"), 4));
    post_turn(s, greedy_turn(conversation("two"), 4));
    const json x = after_adds(s, 2);
    REQUIRE(x["segments"] == 2);
    path = x["path"];
    bytes = x["bytes"];
    ids = x["ids"];
  }
  // A kill -9 mid-append, as the next start finds it: the last record lacks its last 3 bytes.
  REQUIRE(std::filesystem::file_size(path) == bytes);
  std::filesystem::resize_file(path, bytes - 3);
  http_server s(store_flags(dir));
  const json x = opened(s);
  CHECK(x["enabled"] == true);
  const std::uint64_t torn = x["torn_bytes_cut"];
  CHECK(torn > 0);
  CHECK(x["bytes"].get<std::uint64_t>() + torn == bytes - 3);
  CHECK(std::filesystem::file_size(path) == x["bytes"].get<std::uint64_t>());
  CHECK(x["segments"] == 1);  // the second request's record is gone, the first stays
  CHECK(x["ids"].get<std::uint64_t>() < ids);
  CHECK(x["ids"].get<std::uint64_t>() > 0);
}

TEST_CASE("http: a stop right after a request still writes its ids to the suffix store", "[http][suffix]") {
  temp_dir dir("anchorage-http-suffix-stop");
  std::uint64_t used = 0;
  {
    http_server s(store_flags(dir));
    used = used_tokens(post_turn(s, greedy_turn(conversation("stop"), 4)));
    // No wait for the writer's counters: the server stops at once.
  }
  http_server again(store_flags(dir));
  const json x = opened(again);
  CHECK(x["ids"] == used);
  CHECK(x["segments"] == 1);
}
