#pragma once
// A compaction request's continuation (docs/COMPACTION.md): for a request detect_compaction()
// recognises as a flattened transcript (the client's history as text), the tokens the board
// appends to the conversation it holds for the session instead of prefilling the transcript.
#include <optional>
#include <string>

#include "protocol/board_job.hpp"
#include "protocol/openai_types.hpp"
#include "runtime/text/template/chat_renderer.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

// The continuation's tokens: "<|im_end|>\n" (closing the held answer, whose stop token the rows
// never hold), then one user turn holding the client's system text and its instructions, then
// the generation prompt with thinking off, all rendered by `renderer`; and the guard's lines.
// When the client's history ends with a user message nothing answers, also the turn that
// prefills that message as a user turn before the instructions' (turn_after_pending).
// nullopt for any other request, and for the shapes that are ordinary prefix extensions (the
// whole history sent again with an instruction after it: those hit the end anchor as sent).
std::optional<compaction_plan> plan_compaction(const completion_request& r, chat_renderer renderer,
                                               const tokenizer& tok);

// The continuation's tokens for a system text and instructions (the plan without the guard's
// lines or a shape): what plan_compaction() appends, and what the compaction worker prewrites from.
// With `pending`, the user message the held conversation lacks, rendered as a user turn before
// the instructions' turn.
std::optional<compaction_plan> plan_continuation(const std::string& system_text,
                                                 const std::string& instructions, chat_renderer renderer,
                                                 const tokenizer& tok,
                                                 const std::optional<std::string>& pending = std::nullopt);

// What the continuation appends to a held conversation's rows, by the guard over the text they
// decode to (compaction_guard_check): plan.turn when it holds; plan.turn_after_pending when it
// holds for every user line but the client's last, unanswered one; nullopt otherwise.
std::optional<std::vector<token_id>> compaction_continuation(const compaction_plan& plan,
                                                             const tokenizer& tok,
                                                             const std::vector<token_id>& rows);

// compaction_continuation() has a value: the rows hold a conversation the request continues.
bool compaction_guard_holds(const compaction_plan& plan, const tokenizer& tok,
                            const std::vector<token_id>& rows);

// Whether a held conversation of session `held` may serve a compaction request of session
// `request`: false when both are sessions the client named with its session header
// ("header:..." keys) and they differ; true otherwise (a key the server derived from the
// messages names no session the client chose: a compaction request's differs from its
// conversation's by construction).
bool compaction_session_fits(const std::string& request, const std::string& held);

}  // namespace anchorage
