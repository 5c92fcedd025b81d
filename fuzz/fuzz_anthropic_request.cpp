// POST /v1/messages and /v1/messages/count_tokens: parse_anthropic_request
// (runtime/api/anthropic_request.hpp) on any body. Never throws; a mistake is a 400 naming what
// is wrong; an accepted request is a chat with messages, the system text only first.
#include "fuzz/fuzz_support.hpp"
#include "runtime/api/anthropic_request.hpp"

using namespace anchorage;

namespace {

void parse_as(std::string_view body, anthropic_route route) {
  const std::optional<completion_request> accepted = fuzz::accepted_or_400<completion_request, api_error>(
      [&] { return parse_anthropic_request(body, route); });
  if (!accepted) return;
  const completion_request& r = *accepted;
  fuzz::check(r.kind == request_kind::chat, "a Messages request is a chat");
  fuzz::check(r.tools.is_array(), "tools is an array");
  for (std::size_t i = 1; i < r.messages.size(); ++i)
    fuzz::check(r.messages[i].role != "system", "the system text comes first only");
  if (route == anthropic_route::create)
    fuzz::check(r.max_tokens && *r.max_tokens >= 1, "create needs max_tokens");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body = fuzz::as_text(data, size);
  parse_as(body, anthropic_route::create);
  parse_as(body, anthropic_route::count_tokens);
  return 0;
}
