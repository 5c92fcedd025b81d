#include "actors/conductor.hpp"

#include <caf/all.hpp>

namespace anchorage {
namespace {

void reject(conductor_actor::stateful_pointer<conductor_state> self, const request_envelope& env,
            api_error err) {
  self->state.counters.on_rejected(err.status);
  stream_event ev;
  ev.what = stream_event::kind::failed;
  ev.id = env.id;
  ev.error = std::move(err);
  self->send(env.sink, std::move(ev));
}

void dispatch(conductor_actor::stateful_pointer<conductor_state> self) {
  auto& st = self->state;
  if (st.running || st.queue.empty()) return;
  board_job j = std::move(st.queue.front());
  st.queue.pop_front();
  st.running = j.id;
  self->send(st.board, run_atom::value, std::move(j));
}

// Every drain waiting is answered once the server is idle: nothing running or queued, and no
// staged disk write left unwritten (the board reports its staging after each write comes back,
// and its tiers before the ledger entry of the request that staged them).
void answer_drains(conductor_actor::stateful_pointer<conductor_state> self) {
  auto& st = self->state;
  if (st.drains.empty() || st.running || !st.queue.empty() || st.disk_staged_bytes != 0) return;
  for (auto& rp : st.drains) rp.deliver(true);
  st.drains.clear();
}

}  // namespace

conductor_actor::behavior_type conductor(conductor_actor::stateful_pointer<conductor_state> self,
                                         conductor_options opts,
                                         std::function<board_actor(done_receiver)> make_board) {
  auto& init = self->state;  // each handler below takes its own reference, `st`
  init.opts = std::move(opts);
  init.book = std::make_unique<ledger>(init.opts.ledger_path);
  init.board = make_board(caf::actor_cast<done_receiver>(self));
  self->link_to(init.board);
  return {
      [=](generate_atom, request_envelope& env) {
        auto& st = self->state;
        const long waiting = static_cast<long>(st.queue.size());
        if (st.running && waiting >= st.opts.max_queue)
          return reject(self, env,
                        api_error{429, "rate_limit_error",
                                  "the server is busy: " + std::to_string(waiting) +
                                      " requests are already waiting; retry later",
                                  ""});
        auto rendered = render_request(*env.request, st.opts.limits, st.tok, ++st.sequence);
        if (auto* err = std::get_if<api_error>(&rendered)) return reject(self, env, std::move(*err));
        board_job j = std::move(std::get<board_job>(rendered));
        j.id = env.id;
        j.sink = env.sink;
        j.received_ns = env.received_ns;
        // The lookup runs on the board when it takes the job: the resident rows change with
        // every request, so an offer made now would be stale by the time this one runs.
        stream_event ev;
        ev.what = stream_event::kind::accepted;
        ev.id = env.id;
        ev.prompt_tokens = static_cast<long>(j.prompt.size());
        self->send(env.sink, std::move(ev));
        st.queue.push_back(std::move(j));
        dispatch(self);
      },
      [=](cancel_atom, const std::string& id) {
        auto& st = self->state;
        for (auto it = st.queue.begin(); it != st.queue.end(); ++it) {
          if (it->id != id) continue;
          stream_event ev;
          ev.what = stream_event::kind::failed;
          ev.id = id;
          ev.error = api_error{499, "cancelled", "the client went away", ""};
          self->send(it->sink, std::move(ev));
          st.queue.erase(it);
          return;
        }
        if (st.running && *st.running == id)
          self->send<caf::message_priority::high>(st.board, cancel_atom::value, id);
      },
      [=](done_atom, const ledger_entry& e) {
        auto& st = self->state;
        if (e.finish_reason != "error") st.counters.on_finished(e);
        st.book->record(e);
        if (st.running && *st.running == e.id) st.running.reset();
        dispatch(self);
        answer_drains(self);
      },
      [=](tiers_atom, const cache_stats& tiers) {
        self->state.disk_staged_bytes = tiers.disk_staged_bytes;
        self->state.counters.set_tiers(tiers);
        answer_drains(self);
      },
      [=](stats_atom) -> std::string {
        auto& st = self->state;
        nlohmann::json j;
        j["tiers"] = st.counters.tiers();  // one object per cache tier, as the board last reported
        j["requests"] = st.book->totals();
        j["queue"] = {{"waiting", st.queue.size()},
                      {"running", st.running.has_value()},
                      {"max_queue", st.opts.max_queue}};
        nlohmann::json recent = nlohmann::json::array();
        for (const auto& e : st.book->recent()) recent.push_back(to_json(e));
        j["ledger"] = std::move(recent);
        return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      },
      [=](metrics_atom) -> std::string {
        auto& st = self->state;
        return st.counters.text(static_cast<long>(st.queue.size()), st.running.has_value());
      },
      [=](clear_atom, cache_tier tier) -> caf::result<clear_reply> {
        // The names are checked by the admin; the board owns the device tiers.
        return self->delegate(self->state.board, clear_atom::value, tier);
      },
      // Answered (true) once idle; whoever asks bounds the wait with its request's timeout.
      [=](drain_atom) -> caf::result<bool> {
        auto rp = self->make_response_promise<bool>();
        self->state.drains.push_back(rp);
        answer_drains(self);
        return rp;
      },
  };
}

}  // namespace anchorage
