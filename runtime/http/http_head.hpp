#pragma once
// Framing of one HTTP/1.1 request as it arrives: where its head ends, what it says about the
// body, and where a chunked body ends. Pure functions over the bytes received so far, so the
// event loop (http_front) can bound a request before any worker sees it.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace anchorage {

// What the front needs from a request's head; the worker's HTTP library parses it again whole.
struct http_head {
  std::string method, target, version;
  std::size_t size = 0;                               // bytes of the head, the blank line included
  std::optional<std::size_t> content_length;          // Content-Length, when given (and not chunked)
  bool chunked = false;                               // Transfer-Encoding: chunked
  bool expect_continue = false;                       // Expect: 100-continue
  bool close = false;                                 // Connection: close, or HTTP/1.0 without keep-alive
  std::size_t expect_line = 0, expect_line_size = 0;  // where the Expect line is (to drop it)
};

struct head_result {
  enum class kind { incomplete, complete, failed } what = kind::incomplete;
  http_head head;       // kind::complete
  int status = 0;       // kind::failed: 400, 413, 431 or 501
  std::string message;  // kind::failed: for the client
};

// Reads the head at the start of `bytes` (everything received so far on the request). Fails with
// 431 when no head ends within `max_head_bytes`, 400 for a malformed request line, header or
// Content-Length, or a POST/PUT/PATCH with neither Content-Length nor chunked, 413 when the
// Content-Length exceeds `max_body_bytes`, 501 for a transfer coding other than chunked.
head_result read_head(std::string_view bytes, std::size_t max_head_bytes, std::size_t max_body_bytes);

// Finds the end of a chunked body incrementally: feed it the body bytes received so far (always
// from the body's first byte; it resumes where it stopped).
class chunked_scanner {
 public:
  enum class state { more, done, malformed, too_large };
  explicit chunked_scanner(std::size_t max_body_bytes) : max_(max_body_bytes) {}
  // `body` starts at the body's first byte and only grows between calls.
  state scan(std::string_view body);
  // The chunked body's size on the wire, last CRLF included (valid once done).
  std::size_t end() const { return pos_; }

 private:
  enum class stage { size_line, data, data_crlf, trailer } stage_ = stage::size_line;
  std::size_t max_;
  std::size_t pos_ = 0;        // bytes consumed
  std::size_t remaining_ = 0;  // of the current chunk's data
  std::size_t decoded_ = 0;    // data bytes so far
};

}  // namespace anchorage
