#include "runtime/text/compaction_plan.hpp"

#include "runtime/text/compaction_request.hpp"

namespace anchorage {

std::optional<compaction_plan> plan_compaction(const completion_request& r, chat_renderer renderer,
                                               const tokenizer& tok) {
  if (r.kind != request_kind::chat) return std::nullopt;
  const auto c = detect_compaction(r.messages, !r.tools.empty());
  // A normal turn's history with the instruction appended extends the held conversation: as sent.
  if (!c || c->shape == compaction_shape::trailing_instruction) return std::nullopt;
  // The flattened shape's opener introduced the transcript, which the continuation does not hold.
  std::string instructions = c->instructions;
  const std::string opener = "Here is the conversation so far:";
  if (instructions.compare(0, opener.size(), opener) == 0) {
    instructions.erase(0, opener.size());
    instructions.erase(0, instructions.find_first_not_of(" \t\r\n"));
  }
  auto p = plan_continuation(c->system_text, instructions, renderer, tok);
  if (!p) return std::nullopt;
  p->shape = compaction_shape_name(c->shape);
  p->user_lines = c->user_lines;
  return p;
}

std::optional<compaction_plan> plan_continuation(const std::string& system_text,
                                                 const std::string& instructions, chat_renderer renderer,
                                                 const tokenizer& tok) {
  chat_message turn;
  turn.role = "user";
  turn.content = system_text.empty() ? instructions : system_text + "\n\n" + instructions;
  std::string text;
  try {
    text = "<|im_end|>\n" + render_prompt_text(renderer, {turn}, nlohmann::ordered_json::array(), false);
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // the template refuses it: serve the request as sent
  }
  compaction_plan p;
  const std::vector<token_id> ids = tok.encode(text, true);
  p.turn.assign(ids.begin(), ids.end());
  p.starts_in_reasoning = prompt_opens_reasoning(renderer, false);
  return p;
}

bool compaction_guard_holds(const compaction_plan& plan, const tokenizer& tok,
                            const std::vector<token_id>& rows) {
  compaction_request c;
  c.user_lines = plan.user_lines;
  return compaction_guard(c, tok.decode(rows));
}

}  // namespace anchorage
