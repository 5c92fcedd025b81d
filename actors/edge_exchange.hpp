#pragma once
// One generation request's exchange with the conductor, from an HTTP worker thread.
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/scoped_actor.hpp>

#include "protocol/interfaces.hpp"

namespace anchorage {

class exchange {
 public:
  exchange(caf::actor_system& sys, conductor_actor conductor, std::string id,
           std::shared_ptr<const completion_request> req, std::int64_t received_ns);
  // The next event; when none comes within `timeout`, the request is cancelled and a failed
  // event with status 504 is returned.
  stream_event next(std::chrono::seconds timeout = std::chrono::seconds(600));
  // Tells the conductor the client went away (high priority), then drains to the end and
  // returns the last event (finished with reason "cancelled", or failed).
  stream_event cancel();
  const std::string& id() const { return id_; }

 private:
  caf::scoped_actor self_;
  conductor_actor conductor_;
  std::string id_;
};

}  // namespace anchorage
