// The operator's page (runtime/dashboard, docs/DASHBOARD.md) as the server serves it: at / and
// /dashboard, HTML with its script inside, and every number it draws read from a field that
// GET /v1/cache/stats has, so a stat renamed or removed breaks this test and not the page.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/dashboard/dashboard_page.hpp"
#include "tests/support/chat_turns.hpp"
#include "tests/support/headless_page.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// Every data-stat="a.b.c" path the page names.
std::set<std::string> stat_paths(const std::string& page) {
  std::set<std::string> out;
  static const std::regex attr(R"re(data-stat="([^"]+)")re");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), attr); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

const json* at_path(const json& j, const std::string& path) {
  const json* v = &j;
  std::size_t from = 0;
  while (from <= path.size()) {
    const std::size_t dot = path.find('.', from);
    const std::string key = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (!v->is_object() || !v->contains(key)) return nullptr;
    v = &(*v)[key];
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  return v;
}

}  // namespace

TEST_CASE("http: the dashboard is served at / and /dashboard, whole, from the binary", "[http][dashboard]") {
  http_server s;
  for (const char* path : {"/", "/dashboard"}) {
    INFO(path);
    const http_reply r = s.get(path);
    REQUIRE(r.status == 200);
    CHECK(r.header("Content-Type") == "text/html; charset=utf-8");
    CHECK(r.header("Cache-Control") == "no-cache");
    CHECK(r.body == std::string(dashboard_page()));
    CHECK(r.body.rfind("<!doctype html>", 0) == 0);
    CHECK(r.body.find("<title>Anchorage dashboard</title>") != std::string::npos);
    CHECK(r.body.find("</html>") != std::string::npos);
    // It loads nothing from elsewhere: every fetch is one of the server's own routes.
    CHECK(r.body.find("http://") == r.body.find("http://www.w3.org/2000/svg"));
    CHECK(r.body.find("https://") == std::string::npos);
    CHECK(r.body.find("<script src") == std::string::npos);
  }
  CHECK(s.get("/dashboard/").status == 404);
}

TEST_CASE("http: every number the dashboard draws is a field of /v1/cache/stats", "[http][dashboard]") {
  temp_dir dir("anchorage-http-dashboard");
  http_server s({"--cache-dir", dir.str(), "--session-spill", "on", "--response-cache-mb", "16"});
  json messages = json::array({{{"role", "user"}, {"content", "List the files."}}});
  post_turn(s, greedy_turn(messages, 4));
  REQUIRE(s.quiesce());
  const http_reply stats = s.get("/v1/cache/stats");
  REQUIRE(stats.status == 200);
  const json j = stats.body_json();
  const std::set<std::string> paths = stat_paths(std::string(dashboard_page()));
  REQUIRE(paths.size() > 50);
  for (const std::string& p : paths) {
    INFO(p);
    CHECK(at_path(j, p) != nullptr);
  }
  // The routes the page reads answer on this server.
  const std::string page(dashboard_page());
  for (const char* route : {"/v1/cache/stats", "/metrics", "/v1/models"}) {
    INFO(route);
    CHECK(page.find(std::string("fetch(\"") + route + "\")") != std::string::npos);
    CHECK(s.get(route).status == 200);
  }
}

namespace {

// The DOM of `url` once its scripts ran for `budget_ms` of virtual time (fetches included).
std::string dump_dom(const std::string& chromium, const std::string& url, int budget_ms) {
  const std::string cmd =
      chromium + " --headless=new --no-sandbox --disable-gpu --no-first-run " +
      "--disable-extensions --user-data-dir=$(mktemp -d) --virtual-time-budget=" + std::to_string(budget_ms) +
      " --dump-dom '" + url + "' 2>/dev/null";
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return out;
  char buf[65536];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ::pclose(f);
  return out;
}

std::string unescape(std::string s) {
  const std::pair<const char*, const char*> entities[] = {
      {"&quot;", "\""}, {"&#39;", "'"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}};
  for (const auto& [from, to] : entities)
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1))
      s.replace(at, std::strlen(from), to);
  return s;
}

// Every element's (data-stat, data-value) pair in a DOM dump, values as the page's JSON.
std::vector<std::pair<std::string, std::string>> drawn_values(const std::string& dom) {
  std::vector<std::pair<std::string, std::string>> out;
  static const std::regex tag(R"re(<[a-z]+\s[^>]*>)re");
  static const std::regex stat(R"re(data-stat="([^"]*)")re"), value(R"re(data-value="([^"]*)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::string t = it->str();
    std::smatch s, v;
    if (std::regex_search(t, s, stat) && std::regex_search(t, v, value))
      out.emplace_back(s[1], unescape(v[1]));
  }
  return out;
}

const json* at_any(const json& j, const std::string& path) {
  const json* v = &j;
  std::size_t from = 0;
  for (;;) {
    const std::size_t dot = path.find('.', from);
    const std::string key = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (v->is_array() && !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit)) {
      const auto i = std::stoul(key);
      if (i >= v->size()) return nullptr;
      v = &(*v)[i];
    } else if (v->is_object() && v->contains(key)) {
      v = &(*v)[key];
    } else {
      return nullptr;
    }
    if (dot == std::string::npos) return v;
    from = dot + 1;
  }
}

}  // namespace

TEST_CASE("dashboard in headless Chromium: every screen loads without an error and draws the stats' numbers",
          "[http][dashboard][chromium]") {
  const std::string chromium = chromium_binary();
  if (chromium.empty()) {
    WARN("skipped: Debian's chromium is not installed (tools/bootstrap test installs it)");
    return;
  }
  temp_dir dir("anchorage-http-dashboard-page");
  http_server s({"--cache-dir", dir.str(), "--session-spill", "on", "--response-cache-mb", "16",
                 "--disk-min-tokens", "256", "--spill-min-tokens", "256", "--resident-park-gb", "0"});
  // A fixed sequence: a long first turn (the disk's anchors), its follow-up (the end anchor), the
  // first turn again (the response cache), a refused request, another session (the first one's
  // conversation spilled).
  json messages = json::array({{{"role", "system"}, {"content", filler(system_prompt, 1700)}},
                               {{"role", "user"}, {"content", "List the files."}}});
  const turn_reply first = post_turn(s, greedy_turn(messages, 6));
  json next = messages;
  next.push_back({{"role", "assistant"}, {"content", first.message["content"]}});
  next.push_back({{"role", "user"}, {"content", "And the tests?"}});
  post_turn(s, greedy_turn(next, 6));
  post_turn(s, greedy_turn(messages, 6));
  CHECK(s.post("/v1/chat/completions", "{not json").status == 400);
  json other = json::array({{{"role", "system"}, {"content", "Zq " + filler("Gardens and rain.", 900)}},
                            {{"role", "user"}, {"content", "Hello."}}});
  post_turn(s, greedy_turn(other, 4));
  REQUIRE(s.quiesce());  // every write committed, nothing running: the stats stay as they are
  const json stats = s.get("/v1/cache/stats").body_json();
  REQUIRE(stats["tiers"]["disk"]["entries"].get<long>() > 0);
  REQUIRE_FALSE(stats["tiers"]["spill"]["conversations"].empty());
  const json entries = s.get("/v1/cache/disk/entries?limit=20").body_json();

  const std::string base = "http://127.0.0.1:" + std::to_string(s.port()) + "/";
  for (const char* screen : {"overview", "memory", "disk", "spill", "speculation", "compaction"}) {
    INFO(screen);
    const std::string dom = dump_dom(chromium, base + "#" + screen, 2500);
    REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);  // a refresh finished
    // No script error or rejected promise (the page writes each into #errors).
    CHECK(dom.find("<div id=\"errors\"></div>") != std::string::npos);
    // The last refresh reached the server (the status line says "live", not "unreachable").
    CHECK(std::regex_search(dom, std::regex(R"re(id="status"[^>]*>live )re")));
    // The screen asked for is the one shown.
    CHECK(dom.find("<section class=\"screen on\" id=\"" + std::string(screen) + "\">") != std::string::npos);
    // The disk's anchors, on its tab: the route's, in its order.
    if (std::string(screen) == "disk") {
      std::vector<std::string> keys;
      static const std::regex key(R"re(<tr data-key="([0-9a-f]{16})")re");
      for (auto it = std::sregex_iterator(dom.begin(), dom.end(), key); it != std::sregex_iterator(); ++it)
        keys.push_back((*it)[1]);
      std::vector<std::string> want;
      for (const json& e : entries["entries"]) want.push_back(e["key"]);
      CHECK(keys == want);
    }
    // The spill's conversations, on its tab: the stats', in their order.
    if (std::string(screen) == "spill") {
      std::vector<std::string> ids;
      static const std::regex id(R"re(<tr data-id="([0-9a-f]{16})")re");
      for (auto it = std::sregex_iterator(dom.begin(), dom.end(), id); it != std::sregex_iterator(); ++it)
        ids.push_back((*it)[1]);
      std::vector<std::string> want;
      for (const json& c : stats["tiers"]["spill"]["conversations"]) want.push_back(c["id"]);
      CHECK(ids == want);
    }
    // Every drawn number is the stats route's, after the same requests.
    const auto drawn = drawn_values(dom);
    CHECK(drawn.size() > 60);
    for (const auto& [path, value] : drawn) {
      INFO(path << " = " << value);
      const json* want = at_any(stats, path);
      if (value.empty()) {
        CHECK((want == nullptr || want->is_null()));
        continue;
      }
      REQUIRE(want != nullptr);
      const json got = json::parse(value);
      if (got.is_number() && want->is_number())
        CHECK(got.get<double>() == Approx(want->get<double>()).epsilon(1e-12));
      else
        CHECK(got == *want);
    }
  }
}

namespace {

json long_messages(const std::string& head, const std::string& user) {
  return json::array({{{"role", "system"}, {"content", head + filler(system_prompt, 1700)}},
                      {{"role", "user"}, {"content", user}}});
}

// A number as JavaScript and the server read it back: every digit.
std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

TEST_CASE(
    "dashboard in headless Chromium: a budget set on the page with the admin token evicts at once, "
    "and without the token it is refused",
    "[http][dashboard][chromium][settings]") {
  const std::string chromium = chromium_binary();
  if (chromium.empty()) {
    WARN("skipped: Debian's chromium is not installed (tools/bootstrap test installs it)");
    return;
  }
  temp_dir dir("anchorage-http-dashboard-settings");
  http_server s({"--cache-dir", dir.str(), "--disk-min-tokens", "256", "--admin-token", "secret",
                 "--disk-free-gb", "0"});
  // Two sessions with different heads: each one's first long request writes its anchors.
  post_turn(s, chat_body(long_messages("", "List the files in src."), 11, 4));
  post_turn(s, chat_body(long_messages("You are another agent. ", "Explain the build."), 12, 4));
  REQUIRE(s.quiesce());
  const json before = s.get("/v1/cache/stats").body_json()["tiers"]["disk"];
  REQUIRE(before["entries"].get<long>() >= 8);
  const double gb = static_cast<double>(before["bytes"].get<std::uint64_t>() / 2) / 1073741824.0;
  const auto budget = static_cast<std::uint64_t>(gb * 1073741824.0);

  headless_page page(chromium, "http://127.0.0.1:" + std::to_string(s.port()) + "/#disk");
  REQUIRE(
      page.wait_for("document.body.dataset.ready === '1' && "
                    "document.querySelector('#settings input[name=disk_cache_gb]') !== null"));
  // The pinned setting is drawn as fixed by its flag, and cannot be typed into.
  CHECK(page.evaluate("document.querySelector('#settings input[name=disk_free_gb]').disabled") == true);
  const std::string apply_with = [&] {
    return std::string(
               "(token) => { document.querySelector('#settings input[name=disk_cache_gb]').value = '") +
           exact(gb) +
           "'; document.getElementById('admin-token').value = token; "
           "document.getElementById('settings-result').dataset.outcome = ''; "
           "document.getElementById('settings-apply').click(); }";
  }();

  // Without the token: refused, in words, and nothing changed.
  page.evaluate("(" + apply_with + ")('')");
  REQUIRE(page.wait_for("document.getElementById('settings-result').dataset.outcome === 'refused'"));
  CHECK(page.evaluate("document.getElementById('settings-result').dataset.status") == "401");
  CHECK_THAT(page.evaluate("document.getElementById('settings-result').textContent").get<std::string>(),
             Catch::Contains("admin token"));
  const json refused = s.get("/v1/cache/stats").body_json()["tiers"]["disk"];
  CHECK(refused["limit_bytes"] == before["limit_bytes"]);
  CHECK(refused["bytes"] == before["bytes"]);
  CHECK(refused["evictions"] == before["evictions"]);

  // With it: applied, evicted down to the new budget before the answer, saved, and drawn.
  page.evaluate("(" + apply_with + ")('secret')");
  REQUIRE(page.wait_for("document.getElementById('settings-result').dataset.outcome === 'applied'"));
  CHECK_THAT(page.evaluate("document.getElementById('settings-result').textContent").get<std::string>(),
             Catch::Contains("saved"));
  const json after = s.get("/v1/cache/stats").body_json()["tiers"]["disk"];
  CHECK(after["limit_bytes"] == budget);
  CHECK(after["bytes"].get<std::uint64_t>() <= budget);
  CHECK(after["evictions"].get<long>() > before["evictions"].get<long>());
  CHECK(std::filesystem::exists(dir.path / "settings.json"));
  CHECK(page.wait_for("document.querySelector('[data-stat=\"tiers.disk.limit_bytes\"]').dataset.value === '" +
                      std::to_string(budget) + "'"));
  CHECK(page.evaluate(
            "Number(document.querySelector('#settings input[name=disk_cache_gb]').dataset.loaded) === " +
            exact(gb)) == true);
  CHECK(page.evaluate("document.getElementById('errors').children.length") == 0);
  CHECK(page.errors().empty());
}
