#pragma once
#include <string>
#include <vector>

#include "protocol/interfaces.hpp"

namespace anchorage {

// The tier names `?tier=` accepts.
const std::vector<std::string>& cache_tier_names();

// The admin: operator messages. It checks the admin token and the tier name, then hands the
// work to the conductor (which will ask the tiers once they exist).
//   (clear_atom, token, tier) -> std::string JSON | error_code
//   (stats_atom) -> std::string JSON; (metrics_atom) -> std::string Prometheus text
admin_actor::behavior_type admin(admin_actor::pointer self, std::string token, conductor_actor conductor);

}  // namespace anchorage
