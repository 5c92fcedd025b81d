// POST /v1/messages and /v1/messages/count_tokens: parse_anthropic_request
// (runtime/api/anthropic_request.hpp) on any body. Never throws; a mistake is a 400 naming what
// is wrong; an accepted request is a chat with messages, the system text only first.
#include <exception>

#include "fuzz/fuzz_support.hpp"
#include "runtime/api/anthropic_request.hpp"

using namespace anchorage;

namespace {

void parse_as(std::string_view body, anthropic_route route) {
  std::variant<completion_request, api_error> parsed;
  try {
    parsed = parse_anthropic_request(body, route);
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  if (const auto* err = std::get_if<api_error>(&parsed)) {
    fuzz::check(err->status == 400, "a refused request is a 400");
    fuzz::check(!err->message.empty(), "a refusal says what is wrong");
    return;
  }
  const auto& r = std::get<completion_request>(parsed);
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
