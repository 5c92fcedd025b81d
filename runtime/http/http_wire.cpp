#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "runtime/http/http_front.hpp"

namespace anchorage {

http_wire::http_wire(int fd, std::string request, bool last, std::string peer_ip, int peer_port,
                     long write_timeout_ms)
    : fd_(fd),
      request_(std::move(request)),
      last_(last),
      peer_ip_(std::move(peer_ip)),
      peer_port_(peer_port),
      write_timeout_ms_(static_cast<int>(write_timeout_ms)) {}

bool http_wire::write(const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd_, data, n, MSG_NOSIGNAL);
    if (k > 0) {
      data += k;
      n -= static_cast<std::size_t>(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      const int r = ::poll(&p, 1, write_timeout_ms_);
      if (r <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool http_wire::writable() const {
  // POLLRDHUP: the client closed (or half-closed) its side; a stream for it is cancelled at once
  // rather than at the write after the kernel's reset.
  pollfd p{fd_, static_cast<short>(POLLOUT | POLLRDHUP), 0};
  const int r = ::poll(&p, 1, write_timeout_ms_);
  return r > 0 && (p.revents & POLLOUT) != 0 && (p.revents & (POLLRDHUP | POLLERR | POLLHUP | POLLNVAL)) == 0;
}

}  // namespace anchorage
