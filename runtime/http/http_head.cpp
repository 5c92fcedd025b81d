#include "runtime/http/http_head.hpp"

#include <cctype>

namespace anchorage {
namespace {

constexpr std::size_t max_line = 8192;  // a chunk-size or trailer line

// A line longer than max_line is malformed however the body arrives: refused once its CRLF is
// seen, and before that once more than max_line + 1 bytes of it (its text and a CR that may
// begin the CRLF) are here without one.
bool line_cut(std::string_view body, std::size_t line_start) {
  return body.size() - line_start > max_line + 1;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

head_result failed(int status, std::string message) {
  head_result r;
  r.what = head_result::kind::failed;
  r.status = status;
  r.message = std::move(message);
  return r;
}

// "METHOD SP TARGET SP HTTP/1.x"
bool parse_request_line(std::string_view line, http_head& h) {
  const auto a = line.find(' ');
  if (a == std::string_view::npos || a == 0) return false;
  const auto b = line.find(' ', a + 1);
  if (b == std::string_view::npos || b == a + 1) return false;
  h.method = std::string(line.substr(0, a));
  h.target = std::string(line.substr(a + 1, b - a - 1));
  h.version = std::string(line.substr(b + 1));
  return h.version == "HTTP/1.1" || h.version == "HTTP/1.0";
}

bool parse_size(std::string_view v, std::size_t& out) {
  if (v.empty() || v.size() > 18) return false;
  std::size_t x = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<std::size_t>(c - '0');
  }
  out = x;
  return true;
}

}  // namespace

head_result read_head(std::string_view bytes, std::size_t max_head_bytes, std::size_t max_body_bytes) {
  const auto end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos || end + 4 > max_head_bytes) {
    if (bytes.size() >= max_head_bytes || (end != std::string_view::npos && end + 4 > max_head_bytes))
      return failed(431, "the request's headers are larger than the server accepts (--http-max-header-kb)");
    return {};
  }
  head_result r;
  http_head& h = r.head;
  h.size = end + 4;
  std::size_t at = bytes.find("\r\n");
  if (!parse_request_line(bytes.substr(0, at), h)) return failed(400, "malformed HTTP request line");
  bool keep_alive = false;
  std::optional<std::size_t> length;
  for (at += 2; at < end + 2;) {
    const std::size_t eol = bytes.find("\r\n", at);
    const std::string_view line = bytes.substr(at, eol - at);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return failed(400, "malformed HTTP header line");
    const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      std::size_t n = 0;
      if (!parse_size(value, n) || (length && *length != n))
        return failed(400, "malformed Content-Length '" + std::string(value) + "'");
      length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
      if (!iequals(value, "chunked"))
        return failed(501,
                      "the transfer coding '" + std::string(value) + "' is not supported (only chunked)");
      h.chunked = true;
    } else if (iequals(name, "Expect")) {
      if (iequals(value, "100-continue")) {
        h.expect_continue = true;
        h.expect_line = at;
        h.expect_line_size = eol + 2 - at;
      }
    } else if (iequals(name, "Connection")) {
      if (iequals(value, "close")) h.close = true;
      if (iequals(value, "keep-alive")) keep_alive = true;
    }
    at = eol + 2;
  }
  if (h.version == "HTTP/1.0" && !keep_alive) h.close = true;
  if (!h.chunked) h.content_length = length;
  const bool wants_body = h.method == "POST" || h.method == "PUT" || h.method == "PATCH";
  if (wants_body && !h.chunked && !length)
    return failed(400,
                  "the request could not be read (a POST needs a body with its Content-Length, "
                  "or Transfer-Encoding: chunked)");
  if (h.content_length && *h.content_length > max_body_bytes)
    return failed(413, "the request body is larger than the server accepts (--max-body-mb)");
  r.what = head_result::kind::complete;
  return r;
}

chunked_scanner::state chunked_scanner::scan(std::string_view body) {
  for (;;) {
    switch (stage_) {
      case stage::size_line: {
        const auto eol = body.find("\r\n", pos_);
        if (eol == std::string_view::npos) return line_cut(body, pos_) ? state::malformed : state::more;
        if (eol - pos_ > max_line) return state::malformed;
        std::string_view digits = body.substr(pos_, eol - pos_);
        if (const auto semi = digits.find(';'); semi != std::string_view::npos)
          digits = digits.substr(0, semi);
        digits = trim(digits);
        if (digits.empty() || digits.size() > 15) return state::malformed;
        std::size_t n = 0;
        for (char c : digits) {
          const int d = hex_digit(c);
          if (d < 0) return state::malformed;
          n = n * 16 + static_cast<std::size_t>(d);
        }
        pos_ = eol + 2;
        if (n == 0) {
          stage_ = stage::trailer;
          break;
        }
        decoded_ += n;
        if (decoded_ > max_) return state::too_large;
        remaining_ = n;
        stage_ = stage::data;
        break;
      }
      case stage::data: {
        const std::size_t have = body.size() - pos_;
        if (have < remaining_) {
          remaining_ -= have;
          pos_ = body.size();
          return state::more;
        }
        pos_ += remaining_;
        remaining_ = 0;
        stage_ = stage::data_crlf;
        break;
      }
      case stage::data_crlf:
        if (body.size() - pos_ < 2) return state::more;
        if (body.substr(pos_, 2) != "\r\n") return state::malformed;
        pos_ += 2;
        stage_ = stage::size_line;
        break;
      case stage::trailer: {  // trailer lines until an empty one
        const auto eol = body.find("\r\n", pos_);
        if (eol == std::string_view::npos) return line_cut(body, pos_) ? state::malformed : state::more;
        if (eol - pos_ > max_line) return state::malformed;
        const bool last = eol == pos_;
        pos_ = eol + 2;
        if (last) return state::done;
        break;
      }
    }
  }
}

}  // namespace anchorage
