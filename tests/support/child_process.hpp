#pragma once
// What the tests' real servers share (redis_server.hpp, haproxy_server.hpp): the binary looked up
// in Debian's places, a free loopback port, a child stopped with SIGTERM and then SIGKILL, and
// the skip-or-fail rule.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <initializer_list>
#include <string>
#include <thread>

namespace anchorage::testing {

// The first of `paths` that is executable; empty when none is.
inline std::string find_binary(std::initializer_list<const char*> paths) {
  for (const char* p : paths)
    if (::access(p, X_OK) == 0) return p;
  return {};
}

// A loopback port the kernel says is free now (0 when it cannot say).
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

// Stops the child `pid` (SIGCONT first: a frozen child would not see the SIGTERM; SIGKILL after
// 5 s) and reaps it; `pid` is -1 after. Nothing when it is not positive.
inline void stop_child(pid_t& pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGCONT);
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 250; ++i) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) {
      pid = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  pid = -1;
}

}  // namespace anchorage::testing

// In a test: skips, saying why, when the server's package is not installed; fails when it is
// but the server does not answer. `server` has installed(), available() and why().
#define REQUIRE_REAL_SERVER(server)      \
  if (!(server).installed()) {           \
    WARN("skipped: " << (server).why()); \
    return;                              \
  }                                      \
  INFO((server).why());                  \
  REQUIRE((server).available())
