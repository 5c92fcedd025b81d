// The server: `anchorage [flags]` (see --help). SIGTERM or SIGINT drains: stop accepting,
// let running requests finish (up to 30 s), flush, exit 0.
#include <csignal>
#include <iostream>

#include "runtime/core/log.hpp"
#include "actors/server.hpp"
#include "runtime/engine/blas_setup.hpp"

using namespace anchorage;

int main(int argc, char** argv) {
  select_blas_core(argv);
  server_config cfg;
  try {
    cfg = parse_server_args(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    log_error() << e.what();
    return 2;
  }
  if (cfg.help) {
    std::cout << server_help();
    return 0;
  }
  // Signals are taken by sigwait below: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  try {
    if (cfg.engine.model_path) {
      log_info() << "loading " << *cfg.engine.model_path;
    } else {
      const model_config mc = cfg.model();
      log_info() << "loading " << mc.preset << " (grid " << mc.grid << ", context " << mc.ctx_size << ")";
    }
    server s(cfg);
    const int port = s.start();
    log_info() << "serving '" << cfg.served_model_name << "' on http://" << cfg.host << ":" << port;
    int sig = 0;
    sigwait(&signals, &sig);
    log_info() << "draining (signal " << sig << ")";
    const bool clean = s.drain(std::chrono::seconds(30));
    if (!clean) log_warn() << "requests still running after 30 s; stopping anyway";
    s.stop();
    log_info() << "stopped";
    return 0;
  } catch (const std::exception& e) {
    log_error() << e.what();
    return 1;
  }
}
