// POST /v1/chat/completions and /v1/completions: parse_request (runtime/api/openai_request.hpp) on
// any body. Never throws; a mistake is a 400 naming what is wrong; an accepted request keeps the
// documented shape (a chat's messages non-empty, prompt ids inside the vocabulary, at most four
// non-empty stop strings).
#include "fuzz/fuzz_support.hpp"
#include "runtime/api/openai_request.hpp"

using namespace anchorage;

namespace {

void parse_as(std::string_view body, request_kind kind) {
  const std::optional<completion_request> accepted =
      fuzz::accepted_or_400<completion_request, api_error>([&] { return parse_request(body, kind); });
  if (!accepted) return;
  const completion_request& r = *accepted;
  fuzz::check(r.kind == kind, "the request keeps its route's kind");
  fuzz::check(r.stop.size() <= 4, "at most four stop strings");
  for (const auto& s : r.stop) fuzz::check(!s.empty(), "stop strings are non-empty");
  if (kind == request_kind::chat) {
    fuzz::check(!r.messages.empty(), "a chat has messages");
    fuzz::check(r.tools.is_array(), "tools is an array");
  } else {
    fuzz::check(r.prompt_text.has_value() != r.prompt_tokens.has_value(), "a completion has one prompt");
    if (r.prompt_tokens)
      for (std::int32_t id : *r.prompt_tokens)
        fuzz::check(id >= 0 && id < vocab_size(), "prompt ids in the vocabulary");
  }
  if (r.max_tokens) fuzz::check(*r.max_tokens >= 1, "max_tokens >= 1");
  fuzz::check(r.temperature >= 0 && r.temperature <= 2, "temperature in [0, 2]");
  fuzz::check(r.top_p > 0 && r.top_p <= 1, "top_p in (0, 1]");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body = fuzz::as_text(data, size);
  parse_as(body, request_kind::chat);
  parse_as(body, request_kind::completion);
  return 0;
}
