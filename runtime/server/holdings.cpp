#include "runtime/server/holdings.hpp"

#include <xxhash.h>

#include <cstdio>

namespace anchorage {

std::string session_digest(const std::string& session) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(session.data(), session.size())));
  return hex;
}

namespace {

// A session key as the server keys conversations (runtime/text/template/prompt_render.cpp):
// "header:" and the client's session header, the request's prompt_cache_key as it came, or
// "c"/"h" and 16 hex digits (a digest of the messages up to the first user message, or of the
// prompt's head) when the client sent no id. The client's id is digested; a digest has none.
void describe_session(const nlohmann::json& key, nlohmann::json& out) {
  const std::string k = key.is_string() ? key.get<std::string>() : std::string();
  auto is_digest = [&] {
    return k.size() == 17 && (k[0] == 'c' || k[0] == 'h') &&
           k.find_first_not_of("0123456789abcdef", 1) == std::string::npos;
  };
  if (k.rfind("header:", 0) == 0) {
    out["session"] = session_digest(k.substr(7));
    out["keyed_by"] = "header";
  } else if (k.empty() || is_digest()) {
    out["session"] = nullptr;
    out["keyed_by"] = k.empty() ? "none" : (k[0] == 'c' ? "messages" : "head");
  } else {
    out["session"] = session_digest(k);
    out["keyed_by"] = "prompt_cache_key";
  }
}

long number_or(const nlohmann::json& j, const char* key, long fallback = 0) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<long>() : fallback;
}

}  // namespace

nlohmann::json holdings_of(const nlohmann::json& stats, const nlohmann::json& disk_entries) {
  nlohmann::json sessions = nlohmann::json::array();
  if (const auto slots = stats.find("slots"); slots != stats.end() && slots->is_array())
    for (const nlohmann::json& s : *slots) {
      const long tokens = number_or(s, "resident_tokens");
      if (tokens <= 0) continue;
      nlohmann::json e = {{"tokens", tokens},
                          {"end_anchor", number_or(s, "end_anchor")},
                          {"where", "slot"},
                          {"slot", number_or(s, "slot")}};
      describe_session(s.value("session", nlohmann::json()), e);
      sessions.push_back(std::move(e));
    }
  const nlohmann::json& tiers = stats.contains("tiers") ? stats["tiers"] : nlohmann::json::object();
  if (const auto spill = tiers.find("spill"); spill != tiers.end() && spill->contains("conversations"))
    for (const nlohmann::json& c : (*spill)["conversations"]) {
      nlohmann::json e = {{"tokens", number_or(c, "tokens")},
                          {"end_anchor", number_or(c, "end_anchor")},
                          {"where", "spill"},
                          {"conversation", c.value("id", std::string())}};
      describe_session(c.value("session", nlohmann::json()), e);
      sessions.push_back(std::move(e));
    }

  nlohmann::json prefixes = {{"total", 0}, {"entries", nlohmann::json::array()}};
  if (disk_entries.is_object()) {
    prefixes["total"] = number_or(disk_entries, "total");
    for (const nlohmann::json& e : disk_entries.value("entries", nlohmann::json::array()))
      prefixes["entries"].push_back({{"key", e.value("key", std::string())},
                                     {"tokens", number_or(e, "tokens")},
                                     {"bytes", number_or(e, "bytes")},
                                     {"hits", number_or(e, "hits")}});
  }

  nlohmann::json shared = {{"enabled", false}, {"namespace", nullptr}};
  if (const auto disk = tiers.find("disk"); disk != tiers.end() && disk->contains("remote")) {
    const nlohmann::json& r = (*disk)["remote"];
    shared["enabled"] = r.value("enabled", false);
    if (shared["enabled"] == true) shared["namespace"] = r.value("namespace", std::string());
  }
  return {
      {"sessions", std::move(sessions)}, {"prefixes", std::move(prefixes)}, {"shared", std::move(shared)}};
}

}  // namespace anchorage
