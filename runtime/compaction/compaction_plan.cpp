#include "runtime/compaction/compaction_plan.hpp"

#include "runtime/compaction/compaction_request.hpp"

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
  if (c->last_user_pending && c->user_lines.size() >= 2) {
    if (auto q = plan_continuation(c->system_text, instructions, renderer, tok, c->user_lines.back()))
      p->turn_after_pending = std::move(q->turn);
  }
  return p;
}

std::optional<compaction_plan> plan_continuation(const std::string& system_text,
                                                 const std::string& instructions, chat_renderer renderer,
                                                 const tokenizer& tok,
                                                 const std::optional<std::string>& pending) {
  std::vector<chat_message> turns;
  if (pending) {
    chat_message m;
    m.role = "user";
    m.content = *pending;
    turns.push_back(std::move(m));
  }
  chat_message turn;
  turn.role = "user";
  turn.content = system_text.empty() ? instructions : system_text + "\n\n" + instructions;
  turns.push_back(std::move(turn));
  std::string text;
  try {
    text = "<|im_end|>\n" + render_prompt_text(renderer, turns, nlohmann::ordered_json::array(), false);
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // the template refuses it: serve the request as sent
  }
  compaction_plan p;
  const std::vector<token_id> ids = tok.encode(text, true);
  p.turn.assign(ids.begin(), ids.end());
  p.starts_in_reasoning = prompt_opens_reasoning(renderer, false);
  return p;
}

std::optional<std::vector<token_id>> compaction_continuation(const compaction_plan& plan,
                                                             const tokenizer& tok,
                                                             const std::vector<token_id>& rows) {
  switch (compaction_guard_check(plan.user_lines, tok.decode(rows))) {
    case guard_result::holds:
      return std::vector<token_id>(plan.turn.begin(), plan.turn.end());
    case guard_result::holds_but_last:
      if (plan.turn_after_pending.empty()) return std::nullopt;
      return std::vector<token_id>(plan.turn_after_pending.begin(), plan.turn_after_pending.end());
    case guard_result::fails:
      break;
  }
  return std::nullopt;
}

bool compaction_guard_holds(const compaction_plan& plan, const tokenizer& tok,
                            const std::vector<token_id>& rows) {
  return compaction_continuation(plan, tok, rows).has_value();
}

bool compaction_session_fits(const std::string& request, const std::string& held) {
  const std::string named = "header:";
  const bool both_named =
      request.compare(0, named.size(), named) == 0 && held.compare(0, named.size(), named) == 0;
  return !both_named || request == held;
}

}  // namespace anchorage
