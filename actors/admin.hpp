#pragma once
#include <memory>
#include <string>

#include "protocol/interfaces.hpp"
#include "runtime/io/file_env.hpp"
#include "runtime/server/live_settings.hpp"

namespace anchorage {

// The admin: operator messages. It checks the admin token and reads the tier name (`?tier=`:
// resident, store, disk or all; anything else is error_code::unknown_tier), then hands the work
// to the conductor, which hands a clear to the board (unknown_tier again for a disk tier the
// server was not started with) and answers a clear_reply; the route's JSON is made here.
//   (clear_atom, token, tier) -> std::string JSON | error_code
//   (stats_atom) -> std::string JSON; (metrics_atom) -> std::string Prometheus text
// The live settings are its own (runtime/server/live_settings.hpp): a change is checked here
// (bad_setting, setting_pinned, with what was wrong as the error's context string), applied by
// their owners through the conductor, then saved through `env` (none without --cache-dir).
//   (settings_atom) -> std::string JSON; (settings_atom, token, body) -> std::string JSON | error_code
admin_actor::behavior_type admin(admin_actor::pointer self, std::string token, conductor_actor conductor,
                                 live_settings settings, std::shared_ptr<file_env> env);

}  // namespace anchorage
