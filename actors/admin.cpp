#include "actors/admin.hpp"

#include <caf/all.hpp>

#include <algorithm>

#include "protocol/error_code.hpp"
#include "protocol/messages.hpp"

namespace anchorage {

const std::vector<std::string>& cache_tier_names() {
  static const std::vector<std::string> names = {"all", "resident", "store", "disk", "spill", "suffix", "response"};
  return names;
}

admin_actor::behavior_type admin(admin_actor::pointer self, std::string token, conductor_actor conductor) {
  return {
      [=](clear_atom, const std::string& given, const std::string& tier) -> caf::result<std::string> {
        if (token.empty()) return caf::make_error(error_code::admin_disabled);
        if (given != token) return caf::make_error(error_code::unauthorized);
        const auto& names = cache_tier_names();
        if (std::find(names.begin(), names.end(), tier) == names.end())
          return caf::make_error(error_code::unknown_tier);
        return self->delegate(conductor, clear_atom::value, tier);
      },
      [=](stats_atom) { return self->delegate(conductor, stats_atom::value); },
      [=](metrics_atom) { return self->delegate(conductor, metrics_atom::value); },
  };
}

}  // namespace anchorage
