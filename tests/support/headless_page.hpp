#pragma once
// One page in Debian's headless Chromium, driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: the browser reads commands from its fd 3 and writes replies and events
// to its fd 4, each message a JSON text ended by a NUL byte), so a test can open a page the server
// serves, run JavaScript in it (clicks and typing included, as scripts) and read what it drew.
// No websocket, no node: a chromium binary and this file.
//
// The browser runs in its own process group with a fresh profile directory; destroying the page
// ends the group and removes the directory. Every wait has a deadline, and a browser that dies
// is an error, never a hang.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace anchorage::testing {

// Path of Debian's chromium (/usr/bin/chromium or /usr/bin/chromium-browser), or "" when none.
std::string chromium_binary();

class headless_page {
 public:
  // Starts `chromium` headless (--headless=new --no-sandbox --disable-gpu, a fresh --user-data-dir),
  // opens a new tab, navigates it to `url` and waits for its load event; all of it within
  // timeout_ms. Throws std::runtime_error saying what failed: no executable at `chromium`, the
  // browser exited or did not answer in time, the navigation failed (its net:: error), no load event.
  headless_page(const std::string& chromium, const std::string& url, int timeout_ms = 15000);
  // Asks the browser to close (Browser.close), kills its process group if it is still there after
  // 3 s, reaps it and removes the profile directory.
  ~headless_page();
  headless_page(const headless_page&) = delete;
  headless_page& operator=(const headless_page&) = delete;

  // The value of `expression` evaluated in the page (Runtime.evaluate, awaitPromise: a promise's
  // resolved value), as JSON; null for undefined. Throws std::runtime_error carrying the exception
  // text when the script throws or the promise rejects, and when no reply comes within timeout_ms.
  nlohmann::json evaluate(const std::string& expression, int timeout_ms = 10000);
  // Evaluates `expression` as a boolean every 50 ms until it is true (true) or timeout_ms passes
  // (false). Throws as evaluate does when the expression throws or the browser fails.
  bool wait_for(const std::string& expression, int timeout_ms = 10000);
  // Every uncaught exception (Runtime.exceptionThrown) and console.error call (its arguments joined
  // by spaces) the page produced so far, as text, oldest first. Only messages read by a call so
  // far count: evaluate("0") reads those pending.
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  using clock = std::chrono::steady_clock;

  // The reply's "result" to `method` (with the page's sessionId when `on_page`), reading and
  // noting the events that come before it; nullopt when `deadline` passes first. Throws when the
  // browser returns an error or closes the pipe.
  std::optional<nlohmann::json> try_command(const std::string& method, const nlohmann::json& params,
                                            bool on_page, clock::time_point deadline);
  // try_command, throwing when the deadline passes.
  nlohmann::json command(const std::string& method, const nlohmann::json& params, bool on_page,
                         clock::time_point deadline);
  // Runtime.evaluate of `expression`: its value, nullopt when `deadline` passes first.
  std::optional<nlohmann::json> try_evaluate(const std::string& expression, clock::time_point deadline);
  // Writes one message (with its NUL); false when `deadline` passes first.
  bool send_message(const std::string& text, clock::time_point deadline);
  // The next whole message from the browser; nullopt when `deadline` passes first.
  std::optional<nlohmann::json> next_message(clock::time_point deadline);
  // Records what an event tells: errors, the load, a crash (which throws).
  void note_event(const nlohmann::json& message);
  // Closes the browser and removes the profile; safe on a half-started page.
  void shut_down() noexcept;

  pid_t pid_ = -1;           // the browser, leader of its process group
  int fd_ = -1;              // our end of the socket pair that is the browser's fd 3 and fd 4
  std::string profile_dir_;  // the --user-data-dir
  std::string session_;      // the page's sessionId (Target.attachToTarget, flatten)
  std::string inbox_;        // bytes read and not yet a whole message
  int last_id_ = 0;
  bool loaded_ = false;  // Page.loadEventFired seen since the navigation began
  std::vector<std::string> errors_;
};

}  // namespace anchorage::testing
