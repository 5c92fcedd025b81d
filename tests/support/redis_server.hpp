#pragma once
// A real Redis for the shared tier's tests: Debian's redis-server started on a free loopback
// port with no persistence, stopped (SIGTERM, then SIGKILL) by the destructor. installed() is
// false, with why(), when redis-server is not installed (tools/bootstrap test installs it): the
// tests then skip, saying so. Installed but not answering is a failure, not a skip.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <hiredis/hiredis.h>

#include "runtime/remote/redis_env.hpp"
#include "tests/support/child_process.hpp"

namespace anchorage::testing {

class redis_server {
 public:
  redis_server() : port_(free_loopback_port()) {
    binary_ = find_binary({"/usr/bin/redis-server", "/usr/local/bin/redis-server"});
    if (binary_.empty()) {
      why_ = "redis-server is not installed (tools/bootstrap test installs Debian's)";
      return;
    }
    for (int attempt = 0; attempt < 3 && pid_ <= 0; ++attempt) {  // a port taken meanwhile: another
      if (attempt > 0) port_ = free_loopback_port();
      start();
    }
  }
  ~redis_server() { stop(); }
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  bool installed() const { return !binary_.empty(); }
  bool available() const { return installed() && pid_ > 0; }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  // One command on a connection of the test's own (to damage, swap, count or flush records): the
  // reply as text (a string's bytes, an integer's digits, a status such as "OK"; "" for nil). An
  // error reply, or no reply, fails the test.
  std::string command(const std::vector<std::string>& args) const {
    redisContext* c = redisConnect("127.0.0.1", port_);
    REQUIRE(c);
    REQUIRE(c->err == 0);
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    std::string out, error;
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)) out.assign(r->str, r->len);
    if (r && r->type == REDIS_REPLY_INTEGER) out = std::to_string(r->integer);
    if (r && r->type == REDIS_REPLY_ERROR) error.assign(r->str, r->len);
    const bool replied = r != nullptr;
    if (r) freeReplyObject(r);
    redisFree(c);
    INFO(args.front() << ": " << error);
    REQUIRE(replied);
    REQUIRE(error.empty());
    return out;
  }
  redis_options options(const std::string& ns = "t") const {
    redis_options o;
    o.port = port_;
    o.ns = ns;
    o.timeout_ms = 2000;
    return o;
  }

  // Starts the server again on the same port (after stop()); waits until it answers.
  void start() {
    if (pid_ > 0 || binary_.empty()) return;
    const std::string port = std::to_string(port_);
    std::vector<std::string> args = {binary_,       "--port", port,           "--bind",    "127.0.0.1",
                                     "--save",      "",       "--appendonly", "no",        "--protected-mode",
                                     "no",          "--dir",  "/tmp",         "--logfile", "/dev/null",
                                     "--daemonize", "no"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    if (pid_ < 0) {
      why_ = "fork failed";
      return;
    }
    // Up to 10 s for the first PING (a loaded CI machine).
    redis_env probe(options());
    for (int i = 0; i < 500; ++i) {
      if (probe.ping()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    why_ = "redis-server did not answer on port " + port;
    stop();
    pid_ = -1;
  }
  // The server frozen (SIGSTOP) and thawed (SIGCONT): its socket still accepts, nothing answers.
  void freeze() {
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  void thaw() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
  }
  void stop() { stop_child(pid_); }

 private:
  std::string binary_, why_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace anchorage::testing

// In a test: skips, saying why, when redis-server is not installed; fails when it is but does not
// answer.
#define REQUIRE_REDIS(server) REQUIRE_REAL_SERVER(server)
