#pragma once
// A compaction request's continuation (docs/COMPACTION.md): for a request detect_compaction()
// recognises as a flattened transcript (the client's history as text), the tokens the board
// appends to the conversation it holds for the session instead of prefilling the transcript.
#include <optional>
#include <string>

#include "protocol/board_job.hpp"
#include "protocol/openai_types.hpp"
#include "runtime/text/chat_renderer.hpp"
#include "runtime/text/tokenizer.hpp"

namespace anchorage {

// The continuation's tokens: "<|im_end|>\n" (closing the held answer, whose stop token the rows
// never hold), then one user turn holding the client's system text and its instructions, then
// the generation prompt with thinking off, all rendered by `renderer`; and the guard's lines.
// nullopt for any other request, and for the shapes that are ordinary prefix extensions (the
// whole history sent again with an instruction after it: those hit the end anchor as sent).
std::optional<compaction_plan> plan_compaction(const completion_request& r, chat_renderer renderer,
                                               const tokenizer& tok);

// The continuation's tokens for a system text and instructions (the plan without the guard's
// lines or a shape): what plan_compaction() appends, and what the compaction worker prewrites from.
std::optional<compaction_plan> plan_continuation(const std::string& system_text,
                                                 const std::string& instructions, chat_renderer renderer,
                                                 const tokenizer& tok);

// The guard over a held conversation's rows: the first and the last of the client's user lines
// are in the text the rows decode to.
bool compaction_guard_holds(const compaction_plan& plan, const tokenizer& tok,
                            const std::vector<token_id>& rows);

}  // namespace anchorage
