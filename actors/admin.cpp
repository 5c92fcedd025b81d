#include "actors/admin.hpp"

#include <caf/all.hpp>

#include "protocol/cache_source.hpp"
#include "protocol/error_code.hpp"
#include "protocol/messages.hpp"
#include "runtime/core/log.hpp"
#include "runtime/core/secret.hpp"
#include "runtime/server/holdings.hpp"

namespace anchorage {

admin_actor::behavior_type admin(admin_actor::pointer self, std::string token, conductor_actor conductor,
                                 live_settings settings, std::shared_ptr<file_env> env) {
  auto live = std::make_shared<live_settings>(std::move(settings));
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
      [=](settings_atom) { return live->describe().dump(); },
      [=](settings_atom, const std::string& given, const std::string& body) -> caf::result<std::string> {
        if (token.empty()) return caf::make_error(error_code::admin_disabled);
        if (!same_secret(given, token)) return caf::make_error(error_code::unauthorized);
        const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
        if (j.is_discarded())
          return caf::make_error(error_code::bad_setting, std::string("the body is not JSON"));
        cache_settings change;
        if (auto refused = live->parse(j, change)) return caf::make_error(refused->code, refused->message);
        // Applied by their owners first (what a lower limit no longer allows is evicted before
        // the answer), then kept here and saved.
        auto rp = self->make_response_promise<std::string>();
        self->request(conductor, caf::infinite, settings_atom::value, change)
            .then(
                [=](bool) mutable {
                  live->apply(change);
                  nlohmann::json out = live->describe();
                  const status saved =
                      env ? live->save(*env)
                          : status::failure("no --cache-dir: the settings are kept until a restart only");
                  out["persisted"] = saved.is_ok();
                  if (!saved) {
                    log_warn() << "settings: " << saved.error();
                    out["warning"] = saved.error();
                  }
                  rp.deliver(out.dump());
                },
                [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](disk_entries_atom, std::size_t limit) -> caf::result<std::string> {
        auto rp = self->make_response_promise<std::string>();
        self->request(conductor, caf::infinite, disk_entries_atom::value, limit)
            .then([rp](const disk_entry_list& l) mutable { rp.deliver(nlohmann::json(l).dump()); },
                  [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](holdings_atom) -> caf::result<std::string> {  // the stats, then the disk's anchors
        auto rp = self->make_response_promise<std::string>();
        self->request(conductor, caf::infinite, stats_atom::value)
            .then(
                [=](const std::string& stats) mutable {
                  auto parsed =
                      std::make_shared<nlohmann::json>(nlohmann::json::parse(stats, nullptr, false));
                  self->request(conductor, caf::infinite, disk_entries_atom::value, std::size_t{1000})
                      .then(
                          [rp, parsed](const disk_entry_list& l) mutable {
                            rp.deliver(holdings_of(*parsed, nlohmann::json(l)).dump());
                          },
                          [rp, parsed](caf::error&) mutable {  // no disk tier
                            rp.deliver(holdings_of(*parsed, nullptr).dump());
                          });
                },
                [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](stats_atom) { return self->delegate(conductor, stats_atom::value); },
      [=](metrics_atom) { return self->delegate(conductor, metrics_atom::value); },
  };
}

}  // namespace anchorage
