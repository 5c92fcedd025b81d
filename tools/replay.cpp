// anchorage-replay [--FLAG=VALUE ...] TRACE.jsonl ...
//
// Replays each trace recorded with `anchorage --trace FILE` against a fresh in-process server
// (tools/replay/trace_replay.hpp) and prints one JSON line per trace:
//   {"trace": PATH, "requests": N, "ok": BOOL, "mismatches": [...], "seconds": S}
// Arguments starting with "--" are server flags added to the trace header's, in the
// `--flag=value` form (e.g. --device=cuda, --weights=model.safetensors).
// Exits 0 when every trace matches, 1 when one does not, 2 when one cannot be replayed or the
// arguments are wrong.
#include <iostream>
#include <string>
#include <vector>

#include "tools/replay/trace_replay.hpp"
#include "runtime/engine/blas_setup.hpp"

int main(int argc, char** argv) {
  anchorage::select_blas_core(argv);  // the same BLAS kernels as the server that recorded
  std::vector<std::string> flags, traces;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << "usage: anchorage-replay [--FLAG=VALUE ...] TRACE.jsonl ...\n"
                   "Replays traces recorded with `anchorage --trace FILE` against a fresh server configured\n"
                   "from each trace's header (plus the server flags given, as --flag=value) and prints one\n"
                   "JSON summary per trace. Exit status: 0 all match, 1 a mismatch, 2 an error.\n";
      return 0;
    }
    if (a.rfind("--", 0) == 0)
      flags.push_back(a);
    else
      traces.push_back(a);
  }
  if (traces.empty()) {
    std::cerr
        << "anchorage-replay: no trace given (usage: anchorage-replay [--FLAG=VALUE ...] TRACE.jsonl ...)\n";
    return 2;
  }
  int status = 0;
  for (const auto& path : traces) {
    try {
      const anchorage::replay_report r = anchorage::replay_trace(path, flags);
      std::cout << anchorage::to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << std::endl;
      if (!r.ok() && status == 0) status = 1;
    } catch (const std::exception& e) {
      std::cout << nlohmann::json{{"trace", path}, {"ok", false}, {"error", e.what()}}.dump(
                       -1, ' ', false, nlohmann::json::error_handler_t::replace)
                << std::endl;
      status = 2;
    }
  }
  return status;
}
