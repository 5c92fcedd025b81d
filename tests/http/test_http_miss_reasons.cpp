// Miss reasons over HTTP, one case for each reason test_http_miss.cpp does not make (it has
// no_shared_prefix, client_rewrote and other_fingerprint): a request that resumed less deep than
// its prompt shared with what the server held names why in its x_cache, and the stats'
// miss_reasons and /metrics count it, under that reason alone. The disk's reasons come from a
// second server on the first one's --cache-dir (its resident rows gone), its files damaged,
// deleted or judged too slow to read.
#include <filesystem>
#include <fstream>

#include "tests/support/chat_turns.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// The request's miss is `why` and nothing else was counted but `first_turns` requests that found
// nothing held; the stats and the metrics say the same. Returns the tokens it cost.
long require_only(const http_server& s, const turn_reply& t, const std::string& why, long first_turns) {
  INFO(t.x_cache.dump());
  REQUIRE(t.x_cache.contains("miss"));
  CHECK(t.x_cache["miss"]["reason"] == why);
  const long tokens = t.x_cache["miss"]["tokens"].get<long>();
  CHECK(tokens > 0);
  const json st = s.get("/v1/cache/stats").body_json()["tiers"]["miss_reasons"];
  INFO(st.dump());
  CHECK(st[why]["requests"] == 1);
  CHECK(st[why]["tokens"] == tokens);
  for (const auto& [reason, count] : st.items())
    if (reason != why && reason != "no_shared_prefix") CHECK(count["requests"] == 0);
  CHECK(st["no_shared_prefix"]["requests"] == first_turns);
  const std::string metrics = s.get("/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("anchorage_cache_miss_requests_total{reason=\"" + why + "\"} 1\n"));
  CHECK_THAT(metrics, Catch::Contains("anchorage_cache_miss_tokens_total{reason=\"" + why + "\"} " +
                                      std::to_string(tokens) + "\n"));
  return tokens;
}

json keyed(json body, const std::string& key) {
  body["prompt_cache_key"] = key;
  return body;
}

// A raw completion whose first token is no chat turn's: it shares nothing with one.
http_reply unrelated_completion(const http_server& s, std::uint64_t seed) {
  const json body{{"model", "anchorage"},
                  {"prompt", "Zq " + filler("Unrelated text about gardens and rain.", 900)},
                  {"max_tokens", 4},
                  {"temperature", 0},
                  {"seed", seed}};
  return s.post_json("/v1/completions", body);
}

// Nothing set aside when another session comes, and no state-store snapshot answers a turn.
std::vector<std::string> no_set_aside(std::vector<std::string> more = {}) {
  std::vector<std::string> f = {"--resident-park-gb", "0", "--resident-pin-gb", "0",
                                "--cache-budget-gb",  "0"};
  f.insert(f.end(), more.begin(), more.end());
  return f;
}

json first_messages() {
  return json::array({{{"role", "system"}, {"content", filler(system_prompt, 1700)}},
                      {{"role", "user"}, {"content", "List the files."}}});
}

// The disk tier's flags: anchors from 256 tokens, no spill (a restart would read the
// conversation back from it), and `more`.
std::vector<std::string> disk_flags(const temp_dir& dir, std::vector<std::string> more = {}) {
  std::vector<std::string> f = {"--cache-dir", dir.str(),         "--disk-min-tokens",
                                "256",         "--session-spill", "off"};
  f.insert(f.end(), more.begin(), more.end());
  return f;
}

// A first server writes the first turn's anchors to the disk and stops.
void write_first_turn(const temp_dir& dir) {
  http_server a(disk_flags(dir));
  post_turn(a, greedy_turn(first_messages(), 6));
  REQUIRE(a.quiesce());
  REQUIRE(a.get("/v1/cache/stats").body_json()["tiers"]["disk"]["entries"].get<long>() > 0);
}

std::vector<std::filesystem::path> chunk_files(const temp_dir& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path))
    if (e.is_regular_file() && e.path().extension() == ".chk") out.push_back(e.path());
  REQUIRE_FALSE(out.empty());
  return out;
}

}  // namespace

TEST_CASE("http: a conversation another session overwrote is counted as evicted", "[http][stats][miss]") {
  http_server s({"--resident-park-gb", "0", "--resident-pin-gb", "0", "--admin-token", "t0ken"});
  json a = json::array({{{"role", "system"}, {"content", filler(system_prompt, 300)}},
                        {{"role", "user"}, {"content", "List the files."}}});
  const turn_reply first = post_turn(s, keyed(greedy_turn(a, 6), "a"));
  // The state store's snapshot of the turn, kept when it was made, is dropped (an operator's
  // clear); then another session takes the slot's rows.
  REQUIRE(s.post("/v1/cache/clear?tier=store", "", {{"X-Admin-Token", "t0ken"}}).status == 200);
  REQUIRE(unrelated_completion(s, 3).status == 200);
  echo_turn(a, first, "And the tests?");
  const turn_reply next = post_turn(s, keyed(greedy_turn(a, 6), "a"));
  CHECK(next.x_cache["source"] == "cold");
  const long lost = require_only(s, next, "evicted", 2);
  // All of the first turn's rows: its prompt and its answer but the last token.
  CHECK(lost == first.usage["prompt_tokens"].get<long>() + first.usage["completion_tokens"].get<long>() - 1);
}

TEST_CASE("http: a follow-up whose anchors the resident budget refused is counted as budget_refused",
          "[http][stats][miss]") {
  http_server s(no_set_aside({"--resident-gb", "0"}));
  json a = json::array({{{"role", "system"}, {"content", filler(system_prompt, 300)}},
                        {{"role", "user"}, {"content", "List the files."}}});
  const turn_reply first = post_turn(s, keyed(greedy_turn(a, 6), "a"));
  REQUIRE(s.get("/v1/cache/stats").body_json()["tiers"]["resident"]["refusals"].get<long>() > 0);
  echo_turn(a, first, "And the tests?");
  const turn_reply next = post_turn(s, keyed(greedy_turn(a, 6), "a"));
  CHECK(next.x_cache["source"] == "cold");
  require_only(s, next, "budget_refused", 1);
}

TEST_CASE(
    "http: another session that parts from what is held between two anchors is counted as "
    "between_anchors",
    "[http][stats][miss]") {
  http_server s(no_set_aside());
  const std::string sys = filler(system_prompt, 600);
  const json a = json::array(
      {{{"role", "system"}, {"content", sys}}, {{"role", "user"}, {"content", "List the files."}}});
  post_turn(s, keyed(greedy_turn(a, 6), "a"));
  // Session b's system prompt is a's up to one character, 401 characters in.
  const std::size_t at = 401;
  std::string other = sys;
  other[at] = other[at] == 'x' ? 'y' : 'x';
  const json b = json::array(
      {{{"role", "system"}, {"content", other}}, {{"role", "user"}, {"content", "List the files."}}});
  const turn_reply tb = post_turn(s, keyed(greedy_turn(b, 6), "b"));
  CHECK(tb.x_cache["source"] == "resident");  // the grid anchor below where it parts
  const long resumed = tb.x_cache["resumed_at"].get<long>();
  const long parts_at = static_cast<long>(count_tokens("<|im_start|>system\n" + sys.substr(0, at)));
  REQUIRE(resumed < parts_at);
  CHECK(require_only(s, tb, "between_anchors", 1) == parts_at - resumed);
}

TEST_CASE("http: a disk read that fails its checks is counted as verification_failed, its reason bad_crc",
          "[http][disk][miss]") {
  temp_dir dir("anchorage-http-miss-damaged");
  write_first_turn(dir);
  http_server b(disk_flags(dir));
  REQUIRE(b.quiesce());  // the disk actor's scan at its start is done
  // One bit of every chunk's rows flipped on the medium, after the scan indexed them.
  for (const auto& p : chunk_files(dir)) {
    const auto size = std::filesystem::file_size(p);
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size - 7));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(size - 7));
    f.put(static_cast<char>(c ^ 0x10));
  }
  const turn_reply t = post_turn(b, greedy_turn(first_messages(), 6));
  CHECK(t.x_cache["source"] == "cold");
  require_only(b, t, "verification_failed", 0);
  const json disk = b.get("/v1/cache/stats").body_json()["tiers"]["disk"];
  INFO(disk.dump());
  CHECK(disk["sweep"]["indexed"].get<long>() > 0);  // the second start's scan found the files
  CHECK(disk["restore_failures"] == 1);
  CHECK(disk["restore_failure_reasons"]["bad_crc"] == 1);
  CHECK_THAT(b.get("/metrics").body,
             Catch::Contains("anchorage_disk_restore_failures_total{reason=\"bad_crc\"} 1\n"));
}

TEST_CASE("http: a disk offer whose files were deleted before its read is counted as stale_offer",
          "[http][disk][miss]") {
  temp_dir dir("anchorage-http-miss-gone");
  write_first_turn(dir);
  http_server b(disk_flags(dir));
  REQUIRE(b.quiesce());  // the disk actor's scan at its start is done
  // Another process sharing the folder deletes the chunks under this server's index.
  for (const auto& p : chunk_files(dir)) std::filesystem::remove(p);
  const turn_reply t = post_turn(b, greedy_turn(first_messages(), 6));
  CHECK(t.x_cache["source"] == "cold");
  require_only(b, t, "stale_offer", 0);
  const json disk = b.get("/v1/cache/stats").body_json()["tiers"]["disk"];
  INFO(disk.dump());
  CHECK(disk["restore_failure_reasons"]["missing"] == 1);
  CHECK(disk["restore_failures"] == 1);
}

TEST_CASE("http: a disk start whose read would take longer than its prefill is counted as cost_rule",
          "[http][disk][miss]") {
  temp_dir dir("anchorage-http-miss-slow");
  write_first_turn(dir);
  // A disk assumed to read 1 byte a second, and a prefill rate measured by a first request.
  http_server b(disk_flags(dir, {"--disk-read-gbps", "1e-9"}));
  REQUIRE(unrelated_completion(b, 4).status == 200);
  REQUIRE(b.quiesce());
  REQUIRE(b.get("/v1/cache/stats").body_json()["tiers"]["disk"]["prefill_tokens_per_s"].get<double>() > 0);
  const turn_reply t = post_turn(b, greedy_turn(first_messages(), 6));
  CHECK(t.x_cache["source"] == "cold");
  require_only(b, t, "cost_rule", 1);
  const json disk = b.get("/v1/cache/stats").body_json()["tiers"]["disk"];
  CHECK(disk["declined"].get<long>() >= 1);
  CHECK(disk["restore_failures"] == 0);
}
