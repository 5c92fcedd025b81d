#include "runtime/server/live_settings.hpp"

#include <cmath>
#include <functional>
#include <sstream>

namespace anchorage {
namespace {

using json = nlohmann::json;

constexpr double gib = 1073741824.0;
constexpr double mib = 1048576.0;
constexpr double day_s = 86400.0;

enum class owner { disk, spill, device };

// One setting: its names, unit, range, which tier has it, and how it reads and writes a change,
// the config, and the typed message (in the flag's unit).
struct spec {
  const char* key;
  const char* flag;
  const char* unit;
  double lo, hi;
  owner tier;
  std::function<std::optional<double>(const cache_settings&)> get;
  std::function<void(cache_settings&, double)> set;
  std::function<double(const server_config&)> from_config;
  std::function<void(server_config&, double)> to_config;
};

std::uint64_t bytes_of(double g) { return static_cast<std::uint64_t>(g * gib); }
std::uint64_t bytes_of_mib(double m) { return static_cast<std::uint64_t>(m * mib); }
std::int64_t seconds_of(double days) { return static_cast<std::int64_t>(std::llround(days * day_s)); }
template <class T>
std::optional<double> in_gib(const std::optional<T>& b) {
  return b ? std::optional<double>(static_cast<double>(*b) / gib) : std::nullopt;
}

const std::vector<spec>& specs() {
  static const std::vector<spec> all = {
      {"disk_cache_gb", "disk-cache-gb", "GiB", 0, 1e6, owner::disk,
       [](const cache_settings& s) { return in_gib(s.disk_budget_bytes); },
       [](cache_settings& s, double v) { s.disk_budget_bytes = bytes_of(v); },
       [](const server_config& c) { return static_cast<double>(c.disk.store.eviction.budget_bytes) / gib; },
       [](server_config& c, double v) { c.disk.store.eviction.budget_bytes = bytes_of(v); }},
      {"disk_lifetime_days", "disk-lifetime-days", "days", 1 / day_s, 36500, owner::disk,
       [](const cache_settings& s) {
         return s.disk_lifetime_s ? std::optional<double>(static_cast<double>(*s.disk_lifetime_s) / day_s)
                                  : std::nullopt;
       },
       [](cache_settings& s, double v) { s.disk_lifetime_s = seconds_of(v); },
       [](const server_config& c) { return static_cast<double>(c.disk.store.eviction.lifetime_s) / day_s; },
       [](server_config& c, double v) { c.disk.store.eviction.lifetime_s = seconds_of(v); }},
      {"disk_free_gb", "disk-free-gb", "GiB", 0, 1e6, owner::disk,
       [](const cache_settings& s) { return in_gib(s.disk_free_bytes); },
       [](cache_settings& s, double v) { s.disk_free_bytes = bytes_of(v); },
       [](const server_config& c) { return static_cast<double>(c.disk.store.eviction.min_free_bytes) / gib; },
       [](server_config& c, double v) { c.disk.store.eviction.min_free_bytes = bytes_of(v); }},
      {"session_spill_gb", "session-spill-gb", "GiB", 0, 1e6, owner::spill,
       [](const cache_settings& s) { return in_gib(s.spill_budget_bytes); },
       [](cache_settings& s, double v) { s.spill_budget_bytes = bytes_of(v); },
       [](const server_config& c) { return static_cast<double>(c.spill.store.budget_bytes) / gib; },
       [](server_config& c, double v) { c.spill.store.budget_bytes = bytes_of(v); }},
      {"resident_gb", "resident-gb", "GiB", 0, 1e6, owner::device,
       [](const cache_settings& s) { return in_gib(s.resident_bytes); },
       [](cache_settings& s, double v) { s.resident_bytes = bytes_of(v); },
       [](const server_config& c) { return static_cast<double>(c.cache.resident_bytes) / gib; },
       [](server_config& c, double v) { c.cache.resident_bytes = static_cast<std::size_t>(bytes_of(v)); }},
      {"cache_budget_gb", "cache-budget-gb", "GiB", 0, 1e6, owner::device,
       [](const cache_settings& s) { return in_gib(s.store_bytes); },
       [](cache_settings& s, double v) { s.store_bytes = bytes_of(v); },
       [](const server_config& c) { return static_cast<double>(c.cache.store_bytes) / gib; },
       [](server_config& c, double v) { c.cache.store_bytes = static_cast<std::size_t>(bytes_of(v)); }},
      // The vision cache (docs/IMAGES.md): on any server that caches; without a vision tower it
      // holds nothing whatever its limit.
      {"image_cache_mb", "image-cache-mb", "MiB", 0, 16777216, owner::device,
       [](const cache_settings& s) {
         return s.image_cache_bytes ? std::optional<double>(static_cast<double>(*s.image_cache_bytes) / mib)
                                    : std::nullopt;
       },
       [](cache_settings& s, double v) { s.image_cache_bytes = bytes_of_mib(v); },
       [](const server_config& c) { return static_cast<double>(c.cache.image_cache_bytes) / mib; },
       [](server_config& c, double v) {
         c.cache.image_cache_bytes = static_cast<std::size_t>(bytes_of_mib(v));
       }},
  };
  return all;
}

const spec* find_spec(const std::string& key) {
  for (const spec& s : specs())
    if (key == s.key) return &s;
  return nullptr;
}

// The value as a number in range, or why not.
std::optional<std::string> check_value(const spec& s, const json& v, double& out) {
  if (!v.is_number()) return std::string(s.key) + " must be a number (" + s.unit + ")";
  out = v.get<double>();
  if (!std::isfinite(out) || out < s.lo || out > s.hi) {
    std::ostringstream m;
    m << s.key << " must be from " << s.lo << " to " << s.hi << " " << s.unit;
    return m.str();
  }
  return std::nullopt;
}

std::string settings_path(const server_config& cfg) {
  return cfg.cache_dir.empty() ? std::string() : join_path(cfg.cache_dir, settings_file_name);
}

// The file's JSON object; nullopt (and `why`) when there is none or it cannot be parsed.
std::optional<json> read_file(file_env& env, const std::string& path, std::string& why) {
  const auto size = env.size(path);
  if (!size) return std::nullopt;  // no file: nothing saved yet
  std::string text(static_cast<std::size_t>(*size), '\0');
  if (const file_result r = env.read(path, 0, text.data(), text.size()); !r) {
    why = "cannot read " + path + ": " + r.message;
    return std::nullopt;
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    why = path + " is not a JSON object: its values are ignored";
    return std::nullopt;
  }
  return j;
}

}  // namespace

std::vector<std::string> apply_saved_settings(server_config& cfg, file_env& env) {
  std::vector<std::string> lines;
  const std::string path = settings_path(cfg);
  if (path.empty()) return lines;
  std::string why;
  const auto j = read_file(env, path, why);
  if (!j) {
    if (!why.empty()) lines.push_back(why);
    return lines;
  }
  for (const auto& [key, value] : j->items()) {
    const spec* s = find_spec(key);
    double v = 0;
    if (s == nullptr) {
      lines.push_back("settings: unknown key '" + key + "' in " + path + " ignored");
    } else if (auto bad = check_value(*s, value, v)) {
      lines.push_back("settings: " + *bad + ": the saved value is ignored");
    } else if (cfg.flags_given.count(s->flag)) {
      lines.push_back(std::string("settings: --") + s->flag + " given at start wins over the saved " + key);
    } else {
      s->to_config(cfg, v);
      lines.push_back("settings: " + key + " = " + value.dump() + " (saved in " + path + ")");
    }
  }
  return lines;
}

live_settings::live_settings(const server_config& cfg) : file_(settings_path(cfg)) {
  for (const spec& s : specs()) {
    s.set(values_, s.from_config(cfg));
    if (cfg.flags_given.count(s.flag)) pinned_.insert(s.key);
  }
  device_ = !cfg.no_cache;
  disk_ = device_ && !cfg.cache_dir.empty() && cfg.disk.store.eviction.budget_bytes > 0;
  spill_ = device_ && !cfg.cache_dir.empty() && cfg.spill.enabled && cfg.spill.store.budget_bytes > 0;
}

std::optional<settings_refusal> live_settings::parse(const json& body, cache_settings& out) const {
  out = cache_settings{};
  if (!body.is_object() || body.empty())
    return settings_refusal{error_code::bad_setting,
                            "the body must be a JSON object of settings, e.g. "
                            "{\"disk_cache_gb\": 20}"};
  for (const auto& [key, value] : body.items()) {
    const spec* s = find_spec(key);
    if (s == nullptr) return settings_refusal{error_code::bad_setting, "unknown setting '" + key + "'"};
    const bool has = s->tier == owner::disk ? disk_ : s->tier == owner::spill ? spill_ : device_;
    if (!has)
      return settings_refusal{error_code::bad_setting,
                              key + ": this server has no such tier (see GET /v1/cache/settings)"};
    if (pinned_.count(key))
      return settings_refusal{
          error_code::setting_pinned,
          key + " is fixed by --" + s->flag + ", given at start: restart without it to change it"};
    double v = 0;
    if (auto bad = check_value(*s, value, v)) return settings_refusal{error_code::bad_setting, *bad};
    s->set(out, v);
  }
  return std::nullopt;
}

void live_settings::apply(const cache_settings& change) {
  for (const spec& s : specs())
    if (auto v = s.get(change)) {
      s.set(values_, *v);
      s.set(saved_, *v);
    }
}

status live_settings::save(file_env& env) const {
  if (file_.empty()) return status::failure("no --cache-dir: the settings are kept until a restart only");
  // The file's earlier values stay unless changed now (a value saved for a setting a flag pins
  // today is kept for a start without the flag).
  std::string why;
  json j = read_file(env, file_, why).value_or(json::object());
  for (const spec& s : specs())
    if (auto v = s.get(saved_)) j[s.key] = *v;
  const std::string text = j.dump(2) + "\n";
  const auto slash = file_.rfind('/');
  const file_result r = env.write_atomic(file_.substr(0, slash), file_.substr(slash + 1),
                                         {file_piece{text.data(), text.size()}});
  if (!r) return status::failure("cannot save " + file_ + ": " + r.message);
  return status::ok();
}

json live_settings::describe() const {
  json list = json::array();
  for (const spec& s : specs()) {
    const bool has = s.tier == owner::disk ? disk_ : s.tier == owner::spill ? spill_ : device_;
    list.push_back({{"key", s.key},
                    {"flag", std::string("--") + s.flag},
                    {"unit", s.unit},
                    {"value", *s.get(values_)},
                    {"pinned", pinned_.count(s.key) != 0},
                    {"available", has}});
  }
  json saved = json::object();
  for (const spec& s : specs())
    if (auto v = s.get(saved_)) saved[s.key] = *v;
  return {{"settings", list}, {"file", file_.empty() ? json(nullptr) : json(file_)}, {"saved", saved}};
}

}  // namespace anchorage
