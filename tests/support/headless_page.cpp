#include "tests/support/headless_page.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace anchorage::testing {
namespace {

using json = nlohmann::json;
using clock = std::chrono::steady_clock;

clock::time_point after_ms(int ms) { return clock::now() + std::chrono::milliseconds(ms); }

// Milliseconds left until `deadline` for poll(), rounded up; 0 once it has passed.
int ms_left(clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count();
  return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

std::runtime_error failure(const std::string& what) {
  return std::runtime_error("headless chromium: " + what);
}

std::string system_error(const std::string& call) { return call + ": " + std::strerror(errno); }

// The text of a Runtime exceptionDetails: the thrown value's description (an Error's stack) when
// there is one, else its value, else the protocol's summary ("Uncaught").
std::string exception_text(const json& details) {
  if (const auto e = details.find("exception"); e != details.end()) {
    if (e->contains("description")) return (*e)["description"].get<std::string>();
    if (e->contains("value")) return "Uncaught " + (*e)["value"].dump();
  }
  return details.value("text", std::string("exception"));
}

// A console argument (a RemoteObject) as console.error would print it.
std::string console_text(const json& arg) {
  if (const auto v = arg.find("value"); v != arg.end())
    return v->is_string() ? v->get<std::string>() : v->dump();
  if (arg.contains("description")) return arg["description"].get<std::string>();
  if (arg.contains("unserializableValue")) return arg["unserializableValue"].get<std::string>();
  return arg.value("type", std::string());
}

}  // namespace

std::string chromium_binary() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

headless_page::headless_page(const std::string& chromium, const std::string& url, int timeout_ms) {
  const clock::time_point deadline = after_ms(timeout_ms);
  if (::access(chromium.c_str(), X_OK) != 0) throw failure("no executable at '" + chromium + "'");

  std::string dir = (std::filesystem::temp_directory_path() / "anchorage-chromium-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) throw failure(system_error("mkdtemp " + dir));
  profile_dir_ = dir;
  try {
    // Everything the child needs is built before fork: after it, only async-signal-safe calls.
    std::vector<std::string> args = {chromium,
                                     "--headless=new",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--no-first-run",
                                     "--disable-extensions",
                                     "--remote-debugging-pipe",
                                     "--user-data-dir=" + profile_dir_,
                                     "about:blank"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const long max_fd = ::sysconf(_SC_OPEN_MAX);

    // One socket pair serves both directions (the browser's fd 3 and fd 4 are its one end), so
    // writes can use MSG_NOSIGNAL: a dead browser is an error from send, not a SIGPIPE.
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
      throw failure(system_error("socketpair"));
    fd_ = ends[0];

    pid_ = ::fork();
    if (pid_ < 0) {
      const std::string error = system_error("fork");
      ::close(ends[1]);
      throw failure(error);
    }
    if (pid_ == 0) {
      ::setpgid(0, 0);
      // Above 4 first, so that the dup2s below cannot overwrite one another.
      const int high = ::fcntl(ends[1], F_DUPFD, 5);
      const int null = ::open("/dev/null", O_RDWR);
      if (high < 0 || null < 0 || ::dup2(high, 3) < 0 || ::dup2(high, 4) < 0 || ::dup2(null, 0) < 0 ||
          ::dup2(null, 1) < 0 || ::dup2(null, 2) < 0)
        ::_exit(127);
      if (::close_range(5, ~0U, 0) != 0)  // kernels before 5.9
        for (long fd = 5; fd < max_fd; ++fd) ::close(static_cast<int>(fd));
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);  // also here, so the group exists before any kill(-pid_) (EACCES after exec)
    ::close(ends[1]);

    const json target = command("Target.createTarget", {{"url", "about:blank"}}, false, deadline);
    const json attached = command("Target.attachToTarget",
                                  {{"targetId", target.at("targetId")}, {"flatten", true}}, false, deadline);
    session_ = attached.at("sessionId").get<std::string>();
    command("Runtime.enable", json::object(), true, deadline);
    command("Page.enable", json::object(), true, deadline);
    loaded_ = false;  // only the navigation's load counts
    const json nav = command("Page.navigate", {{"url", url}}, true, deadline);
    if (nav.contains("errorText"))
      throw failure("cannot open " + url + ": " + nav["errorText"].get<std::string>());
    while (!loaded_) {
      const std::optional<json> m = next_message(deadline);
      if (!m) throw failure(url + " did not load within " + std::to_string(timeout_ms) + " ms");
      if (!m->contains("id")) note_event(*m);
    }
  } catch (...) {
    shut_down();
    throw;
  }
}

headless_page::~headless_page() { shut_down(); }

json headless_page::evaluate(const std::string& expression, int timeout_ms) {
  std::optional<json> value = try_evaluate(expression, after_ms(timeout_ms));
  if (!value) throw failure("no reply to an evaluate within " + std::to_string(timeout_ms) + " ms");
  return std::move(*value);
}

bool headless_page::wait_for(const std::string& expression, int timeout_ms) {
  const clock::time_point deadline = after_ms(timeout_ms);
  for (;;) {
    const std::optional<json> value = try_evaluate("!!(" + expression + "\n)", deadline);
    if (!value) return false;
    if (*value == true) return true;
    if (clock::now() >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<clock::duration>(std::chrono::milliseconds(50), deadline - clock::now()));
  }
}

std::optional<json> headless_page::try_evaluate(const std::string& expression, clock::time_point deadline) {
  const std::optional<json> reply = try_command(
      "Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}}, true,
      deadline);
  if (!reply) return std::nullopt;
  if (const auto details = reply->find("exceptionDetails"); details != reply->end())
    throw failure("the script threw: " + exception_text(*details));
  const json& result = reply->at("result");
  return result.contains("value") ? result["value"] : json();
}

json headless_page::command(const std::string& method, const json& params, bool on_page,
                            clock::time_point deadline) {
  std::optional<json> reply = try_command(method, params, on_page, deadline);
  if (!reply) throw failure("no reply to " + method + " in time");
  return std::move(*reply);
}

std::optional<json> headless_page::try_command(const std::string& method, const json& params, bool on_page,
                                               clock::time_point deadline) {
  const int id = ++last_id_;
  json message = {{"id", id}, {"method", method}, {"params", params}};
  if (on_page) message["sessionId"] = session_;
  if (!send_message(message.dump(), deadline)) return std::nullopt;
  for (;;) {
    const std::optional<json> m = next_message(deadline);
    if (!m) return std::nullopt;
    if (!m->contains("id")) {
      note_event(*m);
    } else if ((*m)["id"] == id) {  // other ids: replies to commands that timed out earlier
      if (const auto error = m->find("error"); error != m->end())
        throw failure(method + " failed: " + error->value("message", error->dump()));
      return m->value("result", json::object());
    }
  }
}

bool headless_page::send_message(const std::string& text, clock::time_point deadline) {
  const std::string bytes = text + '\0';
  for (std::size_t sent = 0; sent < bytes.size();) {
    pollfd p{fd_, POLLOUT, 0};
    const int ready = ::poll(&p, 1, ms_left(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw failure(system_error("poll"));
    if (ready == 0) return false;
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw failure(system_error("send (the browser has exited?)"));
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<json> headless_page::next_message(clock::time_point deadline) {
  for (;;) {
    if (const std::size_t end = inbox_.find('\0'); end != std::string::npos) {
      json m = json::parse(inbox_.begin(), inbox_.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
      inbox_.erase(0, end + 1);
      if (m.is_discarded()) throw failure("a message that is not JSON");
      return m;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, ms_left(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw failure(system_error("poll"));
    if (ready == 0) return std::nullopt;
    char buf[65536];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n == 0 || (n < 0 && errno == ECONNRESET)) throw failure("the browser closed the pipe (it exited)");
    if (n < 0) throw failure(system_error("read"));
    inbox_.append(buf, static_cast<std::size_t>(n));
  }
}

void headless_page::note_event(const json& message) {
  const std::string method = message.value("method", std::string());
  const json& params = message.contains("params") ? message["params"] : json::object();
  if (method == "Page.loadEventFired") {
    loaded_ = true;
  } else if (method == "Runtime.exceptionThrown") {
    errors_.push_back(exception_text(params.at("exceptionDetails")));
  } else if (method == "Runtime.consoleAPICalled" && params.value("type", std::string()) == "error") {
    std::string text;
    for (const json& arg : params.value("args", json::array()))
      text += (text.empty() ? "" : " ") + console_text(arg);
    errors_.push_back(text);
  } else if (method == "Inspector.targetCrashed") {
    throw failure("the page crashed");
  }
}

void headless_page::shut_down() noexcept {
  if (pid_ > 0) {
    if (fd_ >= 0) {
      try {
        send_message(json({{"id", ++last_id_}, {"method", "Browser.close"}}).dump(), after_ms(1000));
      } catch (...) {  // the browser is gone already; the kill below is for its children
      }
    }
    // Wait for the exit without reaping (WNOWAIT): until it is reaped, the group id cannot be reused,
    // so the kill below reaches only what is left of this browser.
    const clock::time_point deadline = after_ms(3000);
    siginfo_t info{};
    while (clock::now() < deadline) {
      info.si_pid = 0;
      if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
          info.si_pid != 0)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(-pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  if (!profile_dir_.empty()) std::filesystem::remove_all(profile_dir_, ec);
  profile_dir_.clear();
}

}  // namespace anchorage::testing
