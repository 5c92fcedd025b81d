#pragma once
#include <string>

#include "protocol/interfaces.hpp"

namespace anchorage {

// The admin: operator messages. It checks the admin token and reads the tier name (`?tier=`:
// resident, store, disk or all; anything else is error_code::unknown_tier), then hands the work
// to the conductor, which hands a clear to the board (unknown_tier again for a disk tier the
// server was not started with) and answers a clear_reply; the route's JSON is made here.
//   (clear_atom, token, tier) -> std::string JSON | error_code
//   (stats_atom) -> std::string JSON; (metrics_atom) -> std::string Prometheus text
admin_actor::behavior_type admin(admin_actor::pointer self, std::string token, conductor_actor conductor);

}  // namespace anchorage
