#pragma once
// A CAF actor system on the deterministic test scheduler, and recorder actors that keep what
// they receive. Tests step the mailboxes one message at a time; nothing sleeps.
#include <caf/all.hpp>

#include <memory>
#include <vector>

#include "protocol/messages.hpp"

namespace anchorage::testing {

struct caf_fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;

  caf_fixture() {
    cfg.set("scheduler.policy", caf::atom("testing"));
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
  }
  // Every actor spawned through the fixture is stopped before the system goes: an actor
  // system waits for its actors, and on the test scheduler nothing else would end them.
  // Spawn a function with at least one argument after `self`: CAF 0.17.6 dereferences a null
  // pointer to its empty argument tuple otherwise (UndefinedBehaviorSanitizer stops there).
  template <class... Ts>
  auto spawn(Ts&&... xs) {
    auto a = sys->spawn(std::forward<Ts>(xs)...);
    spawned.push_back(caf::actor_cast<caf::actor>(a));
    return a;
  }
  ~caf_fixture() {
    for (auto& a : spawned) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched->run();
    spawned.clear();
  }
  std::vector<caf::actor> spawned;

  // Runs `a`'s queued messages, one at a time, and nothing else's.
  template <class Handle>
  void run_only(const Handle& a) {
    while (sched->prioritize(a)) sched->run_once();
  }

  // The state of a typed stateful actor (for assertions between steps).
  template <class State, class Handle>
  static State& state_of(const Handle& a) {
    auto* p = caf::actor_cast<caf::abstract_actor*>(a);
    return dynamic_cast<caf::stateful_actor<State, typename Handle::base>*>(p)->state;
  }
};

struct recorded {
  std::vector<stream_event> events;
  std::vector<ledger_entry> ledger;
  std::vector<cache_stats> tiers;
};

// Keeps every stream_event, every (done_atom, ledger_entry) and every (tiers_atom, cache_stats)
// it receives.
inline caf::behavior recorder(caf::event_based_actor*, std::shared_ptr<recorded> into) {
  return {
      [into](stream_event& ev) { into->events.push_back(std::move(ev)); },
      [into](done_atom, const ledger_entry& e) { into->ledger.push_back(e); },
      [into](tiers_atom, const cache_stats& s) { into->tiers.push_back(s); },
  };
}

}  // namespace anchorage::testing
