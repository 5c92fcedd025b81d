#pragma once
// What a test reads of processes: this one's resident memory, and a shell command's output and
// exit code (the tests that drive tools/crash-loop and tools/soak).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

namespace anchorage::testing {

// This process's resident set in bytes (/proc/self/statm).
inline std::size_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

struct command_run {
  int exit_code = -1;  // -1: it did not exit (a signal)
  std::string output;  // its stdout
};

// Runs `command` with /bin/sh, reading its stdout to the end.
inline command_run run_command(const std::string& command) {
  command_run run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) run.output.append(buf, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace anchorage::testing
