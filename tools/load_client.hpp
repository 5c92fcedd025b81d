#pragma once
// Raw-socket HTTP clients for load: one request on its own connection, classified the way a
// user sees it (an answer with its status, a reset, a hang), and a pool of slow connections
// that send half a request and then a byte every few seconds (slowloris). Used by the load tool
// (tools/load_bench.cpp) and the load tests (tests/http/test_http_load.cpp). Header-only: the
// tests include it without a library of their own.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace anchorage::load {

using steady = std::chrono::steady_clock;

inline double ms_since(steady::time_point t0) {
  return std::chrono::duration<double, std::milli>(steady::now() - t0).count();
}

// A connected, blocking loopback socket, or -1.
inline int connect_to(int port, int timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One request as the client saw it.
struct outcome {
  enum class kind { answered, reset, timed_out, no_connect } what = kind::no_connect;
  int status = 0;
  bool json_body = false;    // a Content-Length body that parses as JSON
  bool stream_done = false;  // an SSE answer that reached data: [DONE]
  std::string retry_after;
  double first_byte_ms = 0, total_ms = 0;
  std::string head, body;
};

inline std::string header_of(const std::string& head, const std::string& name) {
  const std::string key = "\r\n" + name + ": ";
  const auto at = head.find(key);
  if (at == std::string::npos) return {};
  const auto end = head.find("\r\n", at + key.size());
  return head.substr(at + key.size(), end - at - key.size());
}

// Sends `request` whole (it should say Connection: close) and reads until the server closes.
inline outcome exchange(int port, const std::string& request, int timeout_ms) {
  outcome o;
  const steady::time_point t0 = steady::now();
  const int fd = connect_to(port, timeout_ms);
  if (fd < 0) return o;
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t k = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (k <= 0) {
      o.what = errno == EAGAIN ? outcome::kind::timed_out : outcome::kind::reset;
      ::close(fd);
      return o;
    }
    sent += static_cast<std::size_t>(k);
  }
  std::string all;
  char buf[16384];
  o.what = outcome::kind::answered;
  for (;;) {
    const ssize_t k = ::recv(fd, buf, sizeof buf, 0);
    if (k > 0) {
      if (all.empty()) o.first_byte_ms = ms_since(t0);
      all.append(buf, static_cast<std::size_t>(k));
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0)
      o.what = errno == EAGAIN || errno == EWOULDBLOCK ? outcome::kind::timed_out : outcome::kind::reset;
    break;
  }
  ::close(fd);
  o.total_ms = ms_since(t0);
  const auto split = all.find("\r\n\r\n");
  if (all.rfind("HTTP/1.", 0) != 0 || split == std::string::npos) {
    if (o.what == outcome::kind::answered) o.what = outcome::kind::reset;  // closed without an answer
    return o;
  }
  o.head = all.substr(0, split + 2);
  o.body = all.substr(split + 4);
  o.status = std::atoi(all.c_str() + 9);
  o.retry_after = header_of(o.head, "Retry-After");
  if (!header_of(o.head, "Content-Length").empty())
    o.json_body = !nlohmann::json::parse(o.body, nullptr, false).is_discarded();
  o.stream_done = o.body.find("data: [DONE]") != std::string::npos;
  // a reset after a whole answer is an answer (a reset that cut one short stays a reset)
  if (o.what == outcome::kind::reset && o.status != 0 && (o.json_body || o.stream_done))
    o.what = outcome::kind::answered;
  return o;
}

inline std::string post(const std::string& path, const std::string& body) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}
inline std::string get(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
}

// Connections that send half a request's head, then one more byte every `interval` (never the
// blank line that ends the head). open() returns how many connected; alive() counts those the
// server has not closed yet.
class slow_pool {
 public:
  slow_pool(int port, int n, std::chrono::milliseconds interval) : interval_(interval) {
    for (int i = 0; i < n; ++i) {
      const int fd = connect_to(port, 2000);
      if (fd < 0) continue;
      const std::string half = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
      ::send(fd, half.data(), half.size(), MSG_NOSIGNAL);
      fds_.push_back(fd);
    }
    dripper_ = std::thread([this] {
      while (!stop_) {
        const steady::time_point until = steady::now() + interval_;
        while (!stop_ && steady::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::lock_guard<std::mutex> g(m_);
        for (int& fd : fds_)
          if (fd >= 0 && ::send(fd, "a", 1, MSG_NOSIGNAL) != 1) {
            ::close(fd);
            fd = -1;
          }
      }
    });
  }
  ~slow_pool() {
    stop_ = true;
    dripper_.join();
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }
  int opened() const { return static_cast<int>(fds_.size()); }
  // Connections the server has not closed (a zero-timeout poll: readable or hung up = closed).
  int alive() {
    std::lock_guard<std::mutex> g(m_);
    int n = 0;
    for (int fd : fds_) {
      if (fd < 0) continue;
      pollfd p{fd, POLLIN | POLLRDHUP, 0};
      if (::poll(&p, 1, 0) == 0) ++n;
    }
    return n;
  }

 private:
  std::chrono::milliseconds interval_;
  std::vector<int> fds_;
  std::mutex m_;
  std::atomic<bool> stop_{false};
  std::thread dripper_;
};

// Outcomes of `n` requests sent at once, one thread and one connection each.
inline std::vector<outcome> concurrent(int port, int n, const std::string& request, int timeout_ms) {
  std::vector<outcome> out(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] { out[static_cast<std::size_t>(i)] = exchange(port, request, timeout_ms); });
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace anchorage::load
