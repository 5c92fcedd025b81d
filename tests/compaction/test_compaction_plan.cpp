// The continuation's tokens (runtime/compaction/compaction_plan.hpp) for the request opencode 1.18.33
// sent, and the compaction worker's built-in template (runtime/compaction/opencode_compaction.hpp):
// the worker prewrites from exactly the turn that request plans, under every template, so its
// summary answers that request; a request with other instructions plans another turn.
#include "runtime/compaction/compaction_plan.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "runtime/api/openai_request.hpp"
#include "runtime/compaction/opencode_compaction.hpp"

using namespace anchorage;

namespace {

completion_request captured_compaction() {
  std::ifstream in(
      std::string(ANCHORAGE_SOURCE_DIR) + "/tests/support/clients/opencode-1.18.33/compaction.json",
      std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  auto r = parse_request(s.str(), request_kind::chat);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message);
  return std::get<completion_request>(std::move(r));
}

}  // namespace

TEST_CASE("the worker's built-in continuation is the turn opencode 1.18.33's compaction plans",
          "[compaction][worker]") {
  const chat_renderer renderer =
      GENERATE(chat_renderer::builtin, chat_renderer::qwen35, chat_renderer::qwen3);
  INFO(chat_renderer_name(renderer));
  const tokenizer tok;
  const completion_request r = captured_compaction();
  CHECK(r.messages.at(0).content == opencode_compaction_system_text());
  const auto planned = plan_compaction(r, renderer, tok);
  REQUIRE(planned);
  CHECK(planned->shape == "flattened");
  const auto builtin =
      plan_continuation(opencode_compaction_system_text(), opencode_compaction_instructions(), renderer, tok);
  REQUIRE(builtin);
  CHECK(builtin->turn == planned->turn);
  CHECK(builtin->starts_in_reasoning == planned->starts_in_reasoning);
  // The turn holds the agent's text and the instructions, never the transcript.
  const std::string text = tok.decode(std::vector<token_id>(builtin->turn.begin(), builtin->turn.end()));
  CHECK(text.rfind("<|im_end|>\n", 0) == 0);
  CHECK(text.find("You are a context summarization agent.") != std::string::npos);
  CHECK(text.find("Create a new anchored summary") != std::string::npos);
  CHECK(text.find("[User]:") == std::string::npos);
  CHECK(text.find("\n<conversation>\n") == std::string::npos);
  CHECK(text.find("Here is the conversation so far:") == std::string::npos);
  // Other instructions: another turn (the worker's summary would not answer them).
  const auto other =
      plan_continuation(opencode_compaction_system_text(), "Summarise in one line.", renderer, tok);
  REQUIRE(other);
  CHECK(other->turn != builtin->turn);
}
