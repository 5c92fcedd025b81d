#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/cache_source.hpp"

namespace anchorage {

// What a clear did: the tier it was asked for and the tiers it emptied, in lookup order.
struct clear_reply {
  cache_tier tier = cache_tier::all;
  std::vector<cache_tier> cleared;
};

// The clear route's body: {"cleared": [names], "tier": name}.
inline void to_json(nlohmann::json& j, const clear_reply& r) {
  j = {{"cleared", r.cleared}, {"tier", r.tier}};
}

}  // namespace anchorage
