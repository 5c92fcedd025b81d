#include "runtime/http/http_front.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/http/http_head.hpp"
#include "runtime/http/http_listen.hpp"

namespace anchorage {
namespace {

using steady = std::chrono::steady_clock;

const char* reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// Best effort on a non-blocking socket: an error answer is small and the socket's buffer empty.
void send_some(int fd, const std::string& bytes) {
  std::size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t k = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    at += static_cast<std::size_t>(k);
  }
}

// Which workers answer a request: generations (POST) may hold theirs for minutes, so the other
// routes (/health, /metrics, /v1/models, ...) have workers of their own.
enum class lane_kind { generation, quick };

}  // namespace

struct http_front::impl {
  // One client connection. The loop owns it while it reads; a worker while it answers.
  struct connection {
    enum class phase { head, body, busy, linger } at = phase::head;
    int fd = -1;
    bool counted = true;  // in `open` (a refused connection lingers uncounted)
    std::string buf;      // bytes received and not yet handed to a worker
    steady::time_point deadline;
    bool idle = true;  // no byte of the next request yet
    bool peer_closed = false;
    int served = 0;
    http_head head;
    std::optional<chunked_scanner> chunks;
    std::size_t request_end = 0;
    std::string ip;
    int port = 0;
  };
  using conn_ptr = std::unique_ptr<connection>;

  struct lane {
    std::mutex m;
    std::condition_variable cv;
    std::deque<conn_ptr> ready;
    std::vector<std::thread> threads;
  };

  http_limits limits;
  std::size_t max_body;
  handler answer;
  error_body errors;
  int listen = -1, epoll = -1, wake = -1;
  std::atomic<bool> stopping{false};
  bool started = false;
  std::thread loop_thread;
  lane lanes[2];
  std::mutex back_m;  // connections workers gave back for their next request
  std::vector<conn_ptr> back;
  std::unordered_map<int, conn_ptr> conns;  // the loop's (not busy)
  std::int64_t lingering_refused = 0;
  bool accept_paused = false;
  steady::time_point resume_accept;

  std::atomic<std::int64_t> open{0}, accepted{0}, refused{0}, timed_out{0}, too_large{0}, malformed{0},
      idle_closed{0}, dispatched{0};

  impl(const http_limits& l, std::size_t mb, handler a, error_body e)
      : limits(l), max_body(mb), answer(std::move(a)), errors(std::move(e)) {}

  // ---- the loop thread ----
  void run() {
    epoll_event evs[256];
    steady::time_point last_sweep = steady::now();
    while (!stopping) {
      const int n = ::epoll_wait(epoll, evs, 256, 50);
      for (int i = 0; i < n; ++i) {
        const int fd = evs[i].data.fd;
        if (fd == listen)
          accept_all();
        else if (fd == wake)
          take_back();
        else if (auto it = conns.find(fd); it != conns.end())
          on_readable(*it->second);
      }
      const steady::time_point now = steady::now();
      if (now - last_sweep >= std::chrono::milliseconds(50)) {
        sweep(now);
        last_sweep = now;
      }
    }
    for (auto& [fd, c] : conns) close_fd(*c);
    conns.clear();
  }

  void watch(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    ::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev);
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd =
          ::accept4(listen, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // out of descriptors: stop accepting for a moment rather than spin on the listener
          ::epoll_ctl(epoll, EPOLL_CTL_DEL, listen, nullptr);
          accept_paused = true;
          resume_accept = steady::now() + std::chrono::milliseconds(100);
        }
        return;
      }
      ++accepted;
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // SSE chunks are small
      auto c = std::make_unique<connection>();
      c->fd = fd;
      char host[NI_MAXHOST] = {0}, serv[NI_MAXSERV] = {0};
      if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, serv, sizeof serv,
                        NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
        c->ip = host;
        c->port = std::atoi(serv);
      }
      c->deadline = steady::now() + std::chrono::milliseconds(limits.header_timeout_ms);
      connection& ref = *c;
      conns.emplace(fd, std::move(c));
      watch(fd);
      if (open >= limits.max_connections) {
        ref.counted = false;
        ++refused;
        ++lingering_refused;
        fail(ref, 503, "the server holds --http-max-connections connections; retry shortly", 200);
        continue;
      }
      ++open;
    }
  }

  // The bytes a connection may buffer in its phase: a head, or a whole request and the next
  // one's head (a chunked body's framing may double its data).
  std::size_t cap_of(const connection& c) const {
    if (c.at != connection::phase::body) return limits.max_header_bytes + 1;
    return c.head.size + (c.head.chunked ? 2 * max_body + 65536 : max_body) + limits.max_header_bytes;
  }

  void on_readable(connection& c) {
    char tmp[16384];
    const std::size_t cap = cap_of(c);
    for (;;) {
      const ssize_t k = ::recv(c.fd, tmp, sizeof tmp, 0);
      if (k > 0) {
        if (c.at != connection::phase::linger) c.buf.append(tmp, static_cast<std::size_t>(k));
        if (c.buf.size() >= cap) break;
        continue;
      }
      if (k == 0) {
        c.peer_closed = true;
        break;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.peer_closed = true;
      break;
    }
    if (c.at == connection::phase::linger) {
      if (c.peer_closed) drop(c);
      return;
    }
    const int fd = c.fd;
    advance(c);
    // `c` may have gone to a worker or been closed; a request left incomplete by a client that
    // closed can never complete
    const auto it = conns.find(fd);
    if (it == conns.end() || it->second->at == connection::phase::linger) return;
    if (it->second->peer_closed) return drop(*it->second);
    if (it->second->at == connection::phase::body && it->second->buf.size() >= cap_of(*it->second)) {
      // a chunked body whose framing outgrew its data
      ++too_large;
      fail(*it->second, 413, "the request body is larger than the server accepts (--max-body-mb)",
           limits.linger_ms);
    }
  }

  // Moves a connection's request on as far as its bytes allow.
  void advance(connection& c) {
    const steady::time_point now = steady::now();
    if (c.at == connection::phase::head) {
      if (c.buf.empty()) return;
      if (c.idle) {
        // a new connection's header clock runs from its connect; a kept-alive one's from the
        // first byte of its next request
        c.idle = false;
        if (c.served > 0) c.deadline = now + std::chrono::milliseconds(limits.header_timeout_ms);
      }
      head_result r = read_head(c.buf, limits.max_header_bytes, max_body);
      if (r.what == head_result::kind::incomplete) return;
      if (r.what == head_result::kind::failed) {
        (r.status == 431 || r.status == 413 ? too_large : malformed)++;
        // a 413 lingers for the body: a client writing it whole before it reads gets the answer
        return fail(c, r.status, r.message, r.status == 413 ? limits.body_timeout_ms : limits.linger_ms);
      }
      c.head = std::move(r.head);
      c.at = connection::phase::body;
      c.deadline = now + std::chrono::milliseconds(limits.body_timeout_ms);
      if (c.head.chunked) c.chunks.emplace(max_body);
      if (c.head.expect_continue && c.buf.size() == c.head.size)
        send_some(c.fd, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    std::size_t end = 0;
    if (c.head.chunked) {
      switch (c.chunks->scan(std::string_view(c.buf).substr(c.head.size))) {
        case chunked_scanner::state::more:
          return;
        case chunked_scanner::state::malformed:
          ++malformed;
          return fail(c, 400, "malformed chunked request body", limits.linger_ms);
        case chunked_scanner::state::too_large:
          ++too_large;
          return fail(c, 413, "the request body is larger than the server accepts (--max-body-mb)",
                      limits.body_timeout_ms);
        case chunked_scanner::state::done:
          end = c.head.size + c.chunks->end();
          break;
      }
    } else {
      end = c.head.size + c.head.content_length.value_or(0);
      if (c.buf.size() < end) return;
    }
    dispatch(c, end);
  }

  // Answers an error the front found itself, then reads and drops what the client still sends
  // for `linger_ms` (closing at once with unread bytes would reset the connection, and the
  // client might never read the answer).
  void fail(connection& c, int status, const std::string& message, long linger_ms) {
    const std::string body = errors(status, message);
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
                      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: close\r\n";
    if (status == 503) out += "Retry-After: 1\r\n";
    out += "\r\n" + body;
    send_some(c.fd, out);
    ::shutdown(c.fd, SHUT_WR);
    c.at = connection::phase::linger;
    c.buf.clear();
    c.buf.shrink_to_fit();
    c.deadline = steady::now() + std::chrono::milliseconds(linger_ms);
    if (c.peer_closed) drop(c);
  }

  void dispatch(connection& c, std::size_t end) {
    ::epoll_ctl(epoll, EPOLL_CTL_DEL, c.fd, nullptr);
    c.at = connection::phase::busy;
    c.request_end = end;
    ++dispatched;
    const auto it = conns.find(c.fd);
    conn_ptr owned = std::move(it->second);
    conns.erase(it);
    const bool generation =
        owned->head.method == "POST" || owned->head.method == "PUT" || owned->head.method == "PATCH";
    lane& l = lanes[static_cast<int>(generation ? lane_kind::generation : lane_kind::quick)];
    {
      std::lock_guard<std::mutex> g(l.m);
      l.ready.push_back(std::move(owned));
    }
    l.cv.notify_one();
  }

  void sweep(steady::time_point now) {
    if (accept_paused && now >= resume_accept) {
      accept_paused = false;
      watch(listen);
    }
    std::vector<connection*> due;
    for (auto& [fd, c] : conns)
      if (now >= c->deadline) due.push_back(c.get());
    for (connection* c : due) {
      switch (c->at) {
        case connection::phase::linger:
          drop(*c);
          break;
        case connection::phase::head:
          if (c->idle) {
            ++idle_closed;
            drop(*c);
          } else {
            ++timed_out;
            fail(*c, 408, "the request's headers did not arrive in time (--http-header-timeout-s)",
                 limits.linger_ms);
          }
          break;
        case connection::phase::body:
          ++timed_out;
          fail(*c, 408, "the request body did not arrive in time (--http-body-timeout-s)", limits.linger_ms);
          break;
        case connection::phase::busy:
          break;
      }
    }
  }

  void close_fd(connection& c) {
    ::close(c.fd);
    if (c.counted)
      --open;
    else
      --lingering_refused;
  }

  // Closes a connection the loop holds.
  void drop(connection& c) {
    const int fd = c.fd;
    close_fd(c);
    conns.erase(fd);
  }

  // Connections workers gave back: wait for their next request.
  void take_back() {
    std::uint64_t n = 0;
    while (::read(wake, &n, sizeof n) > 0) {
    }
    std::vector<conn_ptr> got;
    {
      std::lock_guard<std::mutex> g(back_m);
      got.swap(back);
    }
    const steady::time_point now = steady::now();
    for (conn_ptr& c : got) {
      if (c->at == connection::phase::linger) {
        c->buf.clear();
        c->deadline = now + std::chrono::milliseconds(limits.linger_ms);
        const int fd = c->fd;
        conns.emplace(fd, std::move(c));
        watch(fd);
        continue;
      }
      c->at = connection::phase::head;
      c->idle = true;
      c->chunks.reset();
      c->deadline = now + std::chrono::milliseconds(limits.keepalive_timeout_ms);
      connection& ref = *c;
      conns.emplace(ref.fd, std::move(c));
      watch(ref.fd);
      advance(ref);  // a pipelined request may be here already
    }
  }

  // ---- worker threads ----
  void work(lane& l) {
    for (;;) {
      conn_ptr c;
      {
        std::unique_lock<std::mutex> g(l.m);
        l.cv.wait(g, [&] { return stopping || !l.ready.empty(); });
        if (l.ready.empty()) return;
        c = std::move(l.ready.front());
        l.ready.pop_front();
      }
      if (stopping) {
        close_fd(*c);
        continue;
      }
      serve(std::move(c));
    }
  }

  void serve(conn_ptr c) {
    std::string request = c->buf.substr(0, c->request_end);
    if (c->head.expect_continue) request.erase(c->head.expect_line, c->head.expect_line_size);
    c->buf.erase(0, c->request_end);
    ++c->served;
    const bool last = c->head.close || c->peer_closed || c->served >= limits.keepalive_max || stopping;
    http_wire wire(c->fd, std::move(request), last, c->ip, c->port, limits.write_timeout_ms);
    bool again = false;
    try {
      again = answer(wire) && !last;
    } catch (...) {
      again = false;
    }
    if (stopping) return close_fd(*c);
    if (!again) {
      // closing with unread bytes (a pipelined request past the maximum) would reset the
      // connection before the client read the answer: the loop lingers on it instead
      ::shutdown(c->fd, SHUT_WR);
      c->at = connection::phase::linger;
    }
    {
      std::lock_guard<std::mutex> g(back_m);
      back.push_back(std::move(c));
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = ::write(wake, &one, sizeof one);
  }
};

http_front::http_front(const http_limits& limits, std::size_t max_body_bytes, handler answer,
                       error_body errors)
    : impl_(std::make_unique<impl>(limits, max_body_bytes, std::move(answer), std::move(errors))) {}

http_front::~http_front() { stop(); }

int http_front::bind(const std::string& host, int port) {
  impl_->listen = listen_on(host, port);
  return bound_port(impl_->listen);
}

int http_front::listen_fd() const { return impl_->listen; }

void http_front::start() {
  impl& m = *impl_;
  if (m.started || m.listen < 0) throw std::runtime_error("http_front::start without bind");
  m.started = true;
  m.epoll = ::epoll_create1(EPOLL_CLOEXEC);
  m.wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (m.epoll < 0 || m.wake < 0) throw std::runtime_error("cannot create the HTTP event loop");
  m.watch(m.listen);
  m.watch(m.wake);
  const int counts[2] = {std::max(1, m.limits.threads), std::max(1, m.limits.quick_threads)};
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < counts[k]; ++i) m.lanes[k].threads.emplace_back([&m, k] { m.work(m.lanes[k]); });
  m.loop_thread = std::thread([&m] { m.run(); });
}

void http_front::stop() {
  impl& m = *impl_;
  if (m.stopping.exchange(true)) return;
  if (m.loop_thread.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = ::write(m.wake, &one, sizeof one);
    m.loop_thread.join();
  }
  for (lane_kind k : {lane_kind::generation, lane_kind::quick}) {
    impl::lane& l = m.lanes[static_cast<int>(k)];
    { std::lock_guard<std::mutex> g(l.m); }
    l.cv.notify_all();
    for (std::thread& t : l.threads) t.join();
    l.threads.clear();
  }
  for (impl::conn_ptr& c : m.back) m.close_fd(*c);
  m.back.clear();
  for (int fd : {m.listen, m.epoll, m.wake})
    if (fd >= 0) ::close(fd);
  m.listen = m.epoll = m.wake = -1;
}

http_front_counts http_front::counts() const {
  const impl& m = *impl_;
  return {m.open, m.accepted, m.refused, m.timed_out, m.too_large, m.malformed, m.idle_closed, m.dispatched};
}

}  // namespace anchorage
