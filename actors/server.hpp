#pragma once
#include <chrono>
#include <memory>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "protocol/disk_interface.hpp"
#include "protocol/interfaces.hpp"
#include "runtime/server/server_config.hpp"

namespace anchorage {

class http_edge;
class memory_trimmer;

// The whole server in one process: an actor system, the conductor and its board (owning the
// engine built from cfg.engine), the disk tier's actor (with --cache-dir), the HTTP edge, and the
// thread that hands the allocator's free pages back (--memory-trim-s). Used by the `anchorage`
// binary and by the end-to-end tests.
//
// The topology, spawned here in this order, each subsystem given its options struct whole from
// the config (server_config's disk, spill.store, suffix.store, cache), and one stop rule: an
// actor is stopped by whoever is its one client, after the last message that client sent it.
//
//   actor          when                       spawned by          stopped by
//   disk           --cache-dir, a budget      the server          the server (its writer linked)
//   spill writer   --session-spill            the server          the server
//   spill reader   --session-spill, thread    the server          the server
//   suffix writer  --suffix-store             the server          the board, at its exit
//   conductor      always                     the server          the server
//   board          always                     the conductor       linked to the conductor
//   compaction     --compaction-idle-s        the conductor       linked to the conductor
//   admin          always                     the edge            the edge, at its stop
class server {
 public:
  explicit server(const server_config& cfg);
  ~server();

  int start();  // serves; returns the bound port
  // SIGTERM's drain: stop accepting, wait up to `grace` for running and queued requests and for
  // the disk tier's staged writes,
  // then stop the edge. Returns whether everything finished within the grace period.
  bool drain(std::chrono::milliseconds grace);
  // Waits (up to `within`) until nothing runs or waits and every write (disk, spill, suffix
  // store) is committed, with the stats routes showing it; changes nothing (unlike drain).
  // For tests and tools, in place of polling the stats. Returns whether that came in time.
  bool quiesce(std::chrono::milliseconds within);
  // Waits (up to `within`) until at least `n` requests run on the board at once (tests, in place
  // of polling the stats for a request's start). Returns whether that came in time.
  bool wait_running(std::size_t n, std::chrono::milliseconds within);
  // The same for the compaction worker: until the stats show at least `n` idle runs finished.
  bool wait_idle_runs(long n, std::chrono::milliseconds within);
  void stop();

  conductor_actor conductor() const { return conductor_; }
  caf::actor_system& system() { return *system_; }

 private:
  server_config cfg_;
  caf::actor_system_config sys_cfg_;
  std::unique_ptr<caf::actor_system> system_;
  conductor_actor conductor_;
  disk_actor disk_;                      // with --cache-dir
  spill_writer_actor spill_writer_;      // with --cache-dir and --session-spill on
  spill_reader_actor spill_reader_;      // with it
  vision_encoder_actor vision_encoder_;  // with a vision tower on the CPU
  // --suffix-store: stopped by the board, its one client, at the board's exit (after its last
  // add), not here.
  suffix_writer_actor suffix_writer_;
  std::unique_ptr<http_edge> edge_;
  std::unique_ptr<memory_trimmer> trimmer_;  // --memory-trim-s
};

}  // namespace anchorage
