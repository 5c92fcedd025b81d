#include "actors/edge_exchange.hpp"

#include <caf/all.hpp>

namespace anchorage {

exchange::exchange(caf::actor_system& sys, conductor_actor conductor, std::string id,
                   std::shared_ptr<const completion_request> req, std::int64_t received_ns)
    : self_(sys), conductor_(std::move(conductor)), id_(std::move(id)) {
  request_envelope env{id_, std::move(req), received_ns, caf::actor_cast<sink_actor>(self_)};
  self_->send(conductor_, generate_atom::value, std::move(env));
}

stream_event exchange::next(std::chrono::seconds timeout) {
  stream_event out;
  bool got = false;
  self_->receive(
      [&](stream_event& ev) {
        out = std::move(ev);
        got = true;
      },
      caf::after(timeout) >> [&] {});
  if (!got) {
    // give the request up where it is (queued or running), so no work is done for nobody
    self_->send<caf::message_priority::high>(conductor_, cancel_atom::value, id_);
    out.what = stream_event::kind::failed;
    out.id = id_;
    out.error = api_error{504, "server_error", "no answer from the engine in time", ""};
  }
  return out;
}

stream_event exchange::cancel() {
  self_->send<caf::message_priority::high>(conductor_, cancel_atom::value, id_);
  for (;;) {
    auto ev = next(std::chrono::seconds(600));
    if (ev.what == stream_event::kind::finished || ev.what == stream_event::kind::failed) return ev;
  }
}

}  // namespace anchorage
