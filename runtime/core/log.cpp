#include "runtime/core/log.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

namespace anchorage {
namespace {

log_level level_from_env() {
  const char* v = std::getenv("ANCHORAGE_LOG");
  if (!v) return log_level::info;
  if (std::strcmp(v, "debug") == 0) return log_level::debug;
  if (std::strcmp(v, "warn") == 0) return log_level::warn;
  if (std::strcmp(v, "error") == 0) return log_level::error;
  return log_level::info;
}

std::atomic<int>& threshold() {
  static std::atomic<int> t{static_cast<int>(level_from_env())};
  return t;
}

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}

log_sink& sink() {
  static log_sink s;
  return s;
}

const char* prefix(log_level level) {
  switch (level) {
    case log_level::warn:
      return "anchorage: warning: ";
    case log_level::error:
      return "anchorage: error: ";
    default:
      return "anchorage: ";
  }
}

}  // namespace

void set_log_level(log_level level) { threshold().store(static_cast<int>(level)); }

log_level current_log_level() { return static_cast<log_level>(threshold().load()); }

log_sink set_log_sink(log_sink s) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  std::swap(sink(), s);
  return s;
}

log_line::log_line(log_level level) : level_(level), on_(static_cast<int>(level) >= threshold().load()) {}

log_line::~log_line() {
  if (!on_) return;
  const std::string line = text_.str();
  std::lock_guard<std::mutex> lock(sink_mutex());
  if (sink()) {
    sink()(level_, line);
    return;
  }
  std::cerr << prefix(level_) << line << '\n';
}

}  // namespace anchorage
