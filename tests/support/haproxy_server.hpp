#pragma once
// A real HAProxy in front of replicas, for the routing tests: Debian's haproxy started in the
// foreground on a free loopback port with the project's configuration
// (tools/cluster.d/haproxy.cfg.in, its placeholders filled in), stopped by the destructor.
// installed() is false, with why(), when haproxy is not installed (tools/bootstrap test installs
// it): the tests then skip, saying so. Installed but not accepting is a failure, not a skip.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/child_process.hpp"

namespace anchorage::testing {

class haproxy_server {
 public:
  // `replicas`: each replica's name and loopback port. `dir`: where the configuration is written.
  haproxy_server(const std::vector<std::pair<std::string, int>>& replicas, const std::string& dir) {
    binary_ = find_binary({"/usr/sbin/haproxy", "/usr/local/sbin/haproxy"});
    if (binary_.empty()) {
      why_ = "haproxy is not installed (tools/bootstrap test installs Debian's)";
      return;
    }
    std::ifstream in(std::string(ANCHORAGE_SOURCE_DIR) + "/tools/cluster.d/haproxy.cfg.in");
    std::stringstream text;
    text << in.rdbuf();
    std::string cfg = text.str();
    port_ = free_loopback_port();
    std::string servers;
    for (const auto& [name, port] : replicas)
      servers += "    server " + name + " 127.0.0.1:" + std::to_string(port) + " check\n";
    replace(cfg, "@BIND@", "127.0.0.1:" + std::to_string(port_));
    replace(cfg, "@SERVERS@", servers);
    path_ = dir + "/haproxy.cfg";
    std::ofstream(path_) << cfg;
    pid_ = ::fork();
    if (pid_ == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      if (null >= 0) {
        ::dup2(null, 1);
        ::dup2(null, 2);
      }
      ::execl(binary_.c_str(), binary_.c_str(), "-db", "-f", path_.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {  // up to 10 s to accept
      if (accepts()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    why_ = "haproxy did not accept on port " + std::to_string(port_) + " (" + path_ + ")";
    stop();
  }
  ~haproxy_server() { stop(); }
  haproxy_server(const haproxy_server&) = delete;
  haproxy_server& operator=(const haproxy_server&) = delete;

  bool installed() const { return !binary_.empty(); }
  bool available() const { return installed() && pid_ > 0; }
  const std::string& why() const { return why_; }
  int port() const { return port_; }

  void stop() { stop_child(pid_); }

 private:
  static void replace(std::string& s, const std::string& what, const std::string& with) {
    const auto at = s.find(what);
    if (at != std::string::npos) s.replace(at, what.size(), with);
  }
  bool accepts() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    if (fd >= 0) ::close(fd);
    return ok;
  }
  std::string binary_, why_, path_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace anchorage::testing

// In a test: skips, saying why, when haproxy is not installed; fails when it is but does not
// accept.
#define REQUIRE_HAPROXY(proxy) REQUIRE_REAL_SERVER(proxy)
