#include "actors/admin.hpp"

#include <caf/all.hpp>

#include "protocol/cache_source.hpp"
#include "protocol/error_code.hpp"
#include "protocol/messages.hpp"
#include "runtime/core/secret.hpp"

namespace anchorage {

admin_actor::behavior_type admin(admin_actor::pointer self, std::string token, conductor_actor conductor) {
  return {
      [=](clear_atom, const std::string& given, const std::string& tier) -> caf::result<std::string> {
        if (token.empty()) return caf::make_error(error_code::admin_disabled);
        if (!same_secret(given, token)) return caf::make_error(error_code::unauthorized);
        // The name is the wire's; a tier no cache has (or one still to come) is the client's error.
        const auto t = cache_tier_from_string(tier);
        if (!t) return caf::make_error(error_code::unknown_tier);
        // The conductor answers typed; the route's JSON is made here, at the wire's edge.
        auto rp = self->make_response_promise<std::string>();
        self->request(conductor, caf::infinite, clear_atom::value, *t)
            .then([rp](const clear_reply& r) mutable { rp.deliver(nlohmann::json(r).dump()); },
                  [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](stats_atom) { return self->delegate(conductor, stats_atom::value); },
      [=](metrics_atom) { return self->delegate(conductor, metrics_atom::value); },
  };
}

}  // namespace anchorage
