#pragma once
// The settings an operator changes while the server runs (issue 26; POST /v1/cache/settings and
// the dashboard's Settings panel): the disk tier's budget, lifetime and free-space floor, the
// session spill's budget, the device tiers' budgets and the vision cache's. On the wire and in the file each
// is named by its flag with '_' for '-' (disk_cache_gb, disk_lifetime_days, disk_free_gb, session_spill_gb,
// resident_gb, cache_budget_gb, image_cache_mb) and counted in the flag's unit (GiB, days, MiB).
//
// A setting's value is, in order: the flag given at start (the setting is then pinned: a live
// change is refused, and the page says which flag), else the value saved in
// <--cache-dir>/settings.json by an earlier live change, else the default. Saved values are
// applied to the config before any tier is built (apply_saved); a live change is applied by the
// actors that own each limit, then saved (save) so a restart keeps it.
//
// Not thread-safe: one owner (the admin actor).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/cache_settings.hpp"
#include "protocol/error_code.hpp"
#include "runtime/core/status.hpp"
#include "runtime/io/file_env.hpp"
#include "runtime/server/server_config.hpp"

namespace anchorage {

// Why a change was refused: the code (bad_setting or setting_pinned) and what to tell the user.
struct settings_refusal {
  error_code code = error_code::bad_setting;
  std::string message;
};

// The settings file's name under --cache-dir.
inline constexpr const char* settings_file_name = "settings.json";

// Applies the values saved in <cfg.cache_dir>/settings.json to `cfg`, each one whose flag was not
// given (cfg.flags_given). Returns what it did in words, one line per value applied or skipped
// (empty: no file, or no --cache-dir). A file that cannot be read or parsed, an unknown key and a
// value out of range are skipped with a line saying so: the file is a convenience, never a reason
// not to start.
std::vector<std::string> apply_saved_settings(server_config& cfg, file_env& env);

class live_settings {
 public:
  // The values in use (cfg after apply_saved_settings), which the flags pin, and which exist on
  // this server (the disk's with a disk tier, the spill's with a spill, the device tiers' unless
  // --no-cache).
  explicit live_settings(const server_config& cfg);

  // A POST body ({"disk_cache_gb": 0.5, ...}: any of the keys, numbers in the flags' units) as
  // the typed change, or why it is refused: not an object, an unknown key, a value that is not a
  // number or is out of range, a setting this server does not have (bad_setting), or one a flag
  // pins (setting_pinned).
  std::optional<settings_refusal> parse(const nlohmann::json& body, cache_settings& out) const;
  // Records a change the owners applied: the values in use, and the ones to save.
  void apply(const cache_settings& s);
  // Writes every value changed live (the file's earlier ones kept) to <cache-dir>/settings.json,
  // atomically (file_env::write_atomic). Fails without a --cache-dir, or when the write fails
  // (the change stays in force until a restart).
  status save(file_env& env) const;

  // GET /v1/cache/settings: {"settings": [{"key", "flag", "unit", "value", "pinned", "available"},
  // ...], "file": path or null, "saved": {the file's values}}.
  nlohmann::json describe() const;
  const cache_settings& values() const { return values_; }

 private:
  cache_settings values_;  // every field set: the value in use
  cache_settings saved_;   // the values changed live or loaded from the file
  std::set<std::string> pinned_;
  bool disk_ = false, spill_ = false, device_ = false;
  std::string file_;  // empty without --cache-dir
};

}  // namespace anchorage
