// POST /v1/responses: parse_responses_request, then assemble_conversation with no prior
// conversation and with one (runtime/api/responses_request.hpp). Never throws; a mistake is a 400;
// an assembled conversation has at most one system message, first.
#include <exception>

#include "fuzz/fuzz_support.hpp"
#include "runtime/api/responses_request.hpp"

using namespace anchorage;

namespace {

void assemble(responses_request r, const std::vector<chat_message>& prior) {
  std::optional<api_error> err;
  try {
    err = assemble_conversation(r, prior);
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  if (err) {
    fuzz::check(err->status == 400, "a refused conversation is a 400");
    return;
  }
  const auto& m = r.chat.messages;
  fuzz::check(!m.empty(), "an assembled conversation has messages");
  for (std::size_t i = 1; i < m.size(); ++i) fuzz::check(m[i].role != "system", "one system message, first");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::optional<responses_request> accepted = fuzz::accepted_or_400<responses_request, api_error>(
      [&] { return parse_responses_request(fuzz::as_text(data, size)); });
  if (!accepted) return 0;
  const responses_request& r = *accepted;
  fuzz::check(r.chat.messages.empty(), "messages wait for assemble_conversation");
  assemble(r, {});
  chat_message system_turn;
  system_turn.role = "system";
  system_turn.content = "earlier instructions";
  chat_message user_turn;
  user_turn.role = "user";
  user_turn.content = "earlier question";
  assemble(r, {system_turn, user_turn, answer_message({"why", "because", {}})});
  return 0;
}
