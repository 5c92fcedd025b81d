#pragma once
// The log lines written while a log_capture lives (tests that check what a loader or the server
// said).
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/core/log.hpp"

namespace anchorage::testing {

struct log_capture {
  std::vector<std::string> lines;
  log_sink previous;
  log_capture() {
    previous = set_log_sink([this](log_level, const std::string& line) { lines.push_back(line); });
  }
  ~log_capture() { set_log_sink(previous); }
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;
  bool contains(const std::string& needle) const {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(needle) != std::string::npos; });
  }
};

}  // namespace anchorage::testing
