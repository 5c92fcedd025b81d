#pragma once
// The logging seam: one line per event, with a level, to one sink (stderr unless a test or a
// tool sets another). Every layer logs through it instead of writing to std::cerr.
//
//   log_warn() << "a cache tier failed (" << e.what() << ")";
//
// The line is written when the temporary returned by log_*() is destroyed, prefixed
// "anchorage: " (and "warning: " or "error: " by level). Thread-safe: lines from several threads
// never interleave. Lines below the threshold (set_log_level; info by default, or
// ANCHORAGE_LOG=debug|info|warn|error) are not formatted at all.
#include <functional>
#include <sstream>
#include <string>

namespace anchorage {

enum class log_level { debug = 0, info = 1, warn = 2, error = 3 };

// Lines at `level` and above are written.
void set_log_level(log_level level);
log_level current_log_level();
// Where lines go: a function called once per line (without its trailing newline), or the
// default (stderr) when `sink` is empty. Returns the previous sink (empty for the default).
using log_sink = std::function<void(log_level, const std::string&)>;
log_sink set_log_sink(log_sink sink);

// One line in the making.
class log_line {
 public:
  explicit log_line(log_level level);
  ~log_line();
  log_line(const log_line&) = delete;
  log_line& operator=(const log_line&) = delete;
  template <class T>
  log_line& operator<<(const T& v) {
    if (on_) text_ << v;
    return *this;
  }

 private:
  log_level level_;
  bool on_;
  std::ostringstream text_;
};

inline log_line log_debug() { return log_line(log_level::debug); }
inline log_line log_info() { return log_line(log_level::info); }
inline log_line log_warn() { return log_line(log_level::warn); }
inline log_line log_error() { return log_line(log_level::error); }

}  // namespace anchorage
