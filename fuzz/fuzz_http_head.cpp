// The HTTP/1.1 framing every route's bytes pass first (runtime/http/http_head.hpp): read_head on
// any bytes, and the chunked body's scanner fed whole or in two pieces. The head's size lies
// inside the bytes and under the limit; a failure is one of the documented statuses; the scanner
// reaches the same state and end however the body arrives.
#include <exception>

#include "fuzz/fuzz_support.hpp"
#include "runtime/http/http_head.hpp"

using namespace anchorage;

namespace {

constexpr std::size_t max_head = 4096;
constexpr std::size_t max_body = 1 << 16;

struct scanned {
  chunked_scanner::state state;
  std::size_t end;
};

scanned scan_whole(std::string_view body) {
  chunked_scanner s(max_body);
  const auto st = s.scan(body);
  return {st, s.end()};
}

scanned scan_in_two(std::string_view body, std::size_t cut) {
  chunked_scanner s(max_body);
  auto st = s.scan(body.substr(0, cut));
  if (st == chunked_scanner::state::more) st = s.scan(body);
  return {st, s.end()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t cut = static_cast<std::size_t>(data[0] | data[1] << 8) % size;
  const std::string_view bytes = fuzz::as_text(data + 2, size - 2);
  try {
    const head_result r = read_head(bytes, max_head, max_body);
    if (r.what == head_result::kind::complete) {
      fuzz::check(r.head.size <= bytes.size() && r.head.size <= max_head, "the head lies inside the bytes");
      fuzz::check(!r.head.content_length || *r.head.content_length <= max_body,
                  "a body over the limit is a 413");
      fuzz::check(!(r.head.chunked && r.head.content_length), "chunked has no Content-Length");
      if (r.head.expect_continue)
        fuzz::check(r.head.expect_line + r.head.expect_line_size <= r.head.size,
                    "the Expect line is in the head");
    } else if (r.what == head_result::kind::failed) {
      fuzz::check(r.status == 400 || r.status == 413 || r.status == 431 || r.status == 501,
                  "a failed head is 400, 413, 431 or 501");
      fuzz::check(!r.message.empty(), "a failed head says why");
    } else {
      fuzz::check(bytes.size() < max_head, "an incomplete head is under the limit");
    }
    const scanned whole = scan_whole(bytes);
    const scanned two = scan_in_two(bytes, cut);
    fuzz::check(whole.state == two.state, "the scanner's state does not depend on how the body arrives");
    if (whole.state == chunked_scanner::state::done) {
      fuzz::check(whole.end == two.end, "the body's end does not depend on how it arrives");
      fuzz::check(whole.end <= bytes.size(), "the body ends inside the bytes");
    }
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}
