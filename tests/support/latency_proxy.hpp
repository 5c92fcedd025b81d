#pragma once
// A TCP proxy on loopback that adds latency: the tests' slow network between a replica and its
// Redis (issue 28: Redis slowed mid-run). It listens on 127.0.0.1 and a port the kernel picks,
// dials `target_port` on 127.0.0.1 for each connection it accepts, and forwards the bytes both
// ways, holding each chunk it reads for delay_ms() before writing it on (0: at once). The delay
// can be changed at any time; a chunk already held is released as soon as its wait under the
// new delay is over. A half-close is passed on; the destructor stops and joins every thread.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace anchorage::testing {

class latency_proxy {
 public:
  explicit latency_proxy(int target_port, int delay_ms = 0) : target_(target_port), delay_ms_(delay_ms) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof(a);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      if (listen_fd_ >= 0) ::close(listen_fd_);
      listen_fd_ = -1;
      return;
    }
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~latency_proxy() {
    stop_ = true;  // every loop polls with a short timeout and looks at this
    if (acceptor_.joinable()) acceptor_.join();
    for (auto& l : links_) {
      for (std::thread* t : {&l->up, &l->down})
        if (t->joinable()) t->join();
      ::close(l->client);
      ::close(l->upstream);
    }
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }
  latency_proxy(const latency_proxy&) = delete;
  latency_proxy& operator=(const latency_proxy&) = delete;

  int port() const { return port_; }  // 0: the proxy could not listen
  void set_delay_ms(int ms) { delay_ms_ = ms; }
  int delay_ms() const { return delay_ms_; }
  long connections() const { return accepted_; }  // dialled to the target so far
  long chunks() const { return chunks_; }         // forwarded so far, both ways

 private:
  struct link {
    int client = -1, upstream = -1;
    std::thread up, down;
  };

  static sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    return a;
  }
  // Whether `fd` has something to read (or an end) within 50 ms; false when stopping.
  bool readable(int fd) const {
    pollfd p{fd, POLLIN, 0};
    while (!stop_) {
      const int r = ::poll(&p, 1, 50);
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
    return false;
  }

  void accept_loop() {
    while (readable(listen_fd_)) {
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) continue;
      const int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
      const sockaddr_in t = loopback(target_);
      if (upstream < 0 || ::connect(upstream, reinterpret_cast<const sockaddr*>(&t), sizeof(t)) != 0) {
        ::close(client);  // the target refuses: so does the proxy
        if (upstream >= 0) ::close(upstream);
        continue;
      }
      const int on = 1;  // no Nagle: a chunk goes on when it is due, as Redis and hiredis send theirs
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      ::setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      ++accepted_;
      auto l = std::make_unique<link>();
      l->client = client;
      l->upstream = upstream;
      l->up = std::thread([this, client, upstream] { pump(client, upstream); });
      l->down = std::thread([this, client, upstream] { pump(upstream, client); });
      links_.push_back(std::move(l));  // only this thread touches links_ until the destructor joins it
    }
  }

  // Bytes from `from` to `to`, each chunk held for the delay; an end of `from` is passed on as a
  // half-close of `to`, an error closes both ways.
  void pump(int from, int to) {
    char buf[16384];
    while (readable(from)) {
      const ssize_t n = ::recv(from, buf, sizeof buf, 0);
      if (n == 0) {
        ::shutdown(to, SHUT_WR);
        return;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        break;
      }
      const auto arrived = std::chrono::steady_clock::now();
      while (!stop_ &&
             std::chrono::steady_clock::now() - arrived < std::chrono::milliseconds(delay_ms_.load()))
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (stop_) return;
      for (ssize_t sent = 0; sent < n;) {
        const ssize_t w = ::send(to, buf + sent, static_cast<std::size_t>(n - sent), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          ::shutdown(from, SHUT_RDWR);
          ::shutdown(to, SHUT_RDWR);
          return;
        }
        sent += w;
      }
      ++chunks_;
    }
    ::shutdown(from, SHUT_RDWR);
    ::shutdown(to, SHUT_RDWR);
  }

  int target_;
  std::atomic<int> delay_ms_;
  std::atomic<bool> stop_{false};
  std::atomic<long> accepted_{0}, chunks_{0};
  int listen_fd_ = -1, port_ = 0;
  std::vector<std::unique_ptr<link>> links_;
  std::thread acceptor_;
};

}  // namespace anchorage::testing
