#include "actors/edge_stream.hpp"

#include <algorithm>
#include <cstring>

namespace anchorage {
namespace {

// httplib's Stream over one request's bytes (read) and its client's socket (write).
class wire_stream final : public httplib::Stream {
 public:
  explicit wire_stream(http_wire& wire) : wire_(wire) {}
  bool is_readable() const override { return read_ < wire_.request().size(); }
  bool is_writable() const override { return wire_.writable(); }
  ssize_t read(char* ptr, size_t size) override {
    const std::size_t n = std::min(size, wire_.request().size() - read_);
    std::memcpy(ptr, wire_.request().data() + read_, n);
    read_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    return wire_.write(ptr, size) ? static_cast<ssize_t>(size) : -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = wire_.peer_ip();
    port = wire_.peer_port();
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip.clear();
    port = 0;
  }
  // No socket of its own for httplib to select() on (its FD_SETSIZE check would refuse a
  // descriptor above 1023 with a 500; the front holds more connections than that).
  socket_t socket() const override { return INVALID_SOCKET; }

 private:
  http_wire& wire_;
  std::size_t read_ = 0;
};

}  // namespace

bool edge_http_server::answer(http_wire& wire) {
  wire_stream stream(wire);
  bool client_closes = false;
  const bool sent = process_request(stream, wire.last(), client_closes, nullptr);
  return sent && !client_closes;
}

}  // namespace anchorage
