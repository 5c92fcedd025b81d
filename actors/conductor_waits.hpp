#pragma once
// The conductor's typed waits (actors/conductor_waits.cpp), internal to actors/conductor: the
// drain, the quiesce and the waits for starts and idle runs, each a promise answered once the
// request queue, the board and the disk actor say it holds.
#include <cstddef>

#include <caf/typed_response_promise.hpp>

#include "actors/conductor.hpp"

namespace anchorage {

using conductor_ptr = conductor_actor::stateful_pointer<conductor_state>;

// Each kind of wait: queued, then answered at once if it already holds.
caf::result<bool> await_drain(conductor_ptr self);
caf::result<bool> await_quiesce(conductor_ptr self);
caf::result<bool> await_start(conductor_ptr self, std::size_t running);
caf::result<bool> await_idle_runs(conductor_ptr self, long finished);

// Every wait of a kind answered that what changed now satisfies.
// Starts: as many requests running at once as each asked (after every move of the queue).
void answer_startings(conductor_ptr self);
// Idle runs: the board's last stats show as many finished (after each of the board's stats).
void answer_idle_waits(conductor_ptr self);
// Drains: once the queue says the server is idle; the planned stop's spill and the disk's drain
// are asked for on the way (request_queue::next_drain).
void answer_drains(conductor_ptr self);
// Quiesces: once the queue is quiet, the disk's first stats came (it scans its folder first),
// and the board is quiet (its slots idle and its writes committed; its stats come with the
// answer). The disk's stats are fresh by then: it sends them before it answers each of the
// board's writes.
void answer_quiesces(conductor_ptr self);

}  // namespace anchorage
