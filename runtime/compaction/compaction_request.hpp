#pragma once
// Recognising a client's compaction request (issue 15, item 1) and the guard that decides whether
// it may be served as the continuation of the conversation the server holds (item 3). Pure
// functions over the messages as the OpenAI edge read them; no state, thread-safe.
//
// The shapes (docs/COMPACTION.md). A flattened request is recognised by its structure; the
// others by an instruction that opens the last user text (matched exactly after leading white
// space):
//   flattened            a system text (any), no tools, and as its only other message one user
//                        message holding exactly one <conversation> ... </conversation> block of
//                        "[Label]:" entries with at least one "[User]:" entry, then instructions
//                        after the block; optionally exactly one <prior-summary> ...
//                        </prior-summary> block, after the conversation block (opencode's repeat
//                        compaction: the earlier summary and a request to combine the two).
//   anchored             the last message a user message opening "Create a new anchored summary"
//                        or "Update the anchored summary below", with a summariser's system text
//                        and no tools; the transcript in a <conversation> block of any user
//                        message, or else the earlier messages themselves.
//   continue_prompt      earlier messages with at least one user message, then a last user
//                        message opening "Provide a detailed prompt for continuing our
//                        conversation above.", no tools (any system text: opencode's older
//                        compaction agents sent their own).
//   claude_code          earlier messages with at least one user message, then a last user
//                        message opening "Your task is to create a detailed summary of" (after
//                        an optional "CRITICAL: Respond with TEXT ONLY." paragraph), no tools:
//                        Claude Code's compaction (its own messages, not flattened; the wording
//                        is from third-party captures, unconfirmed).
//   trailing_instruction the last user message opens with one of the anchored, continue or
//                        Claude Code openers after a history with at least one user message, and
//                        tools are present or (anchored openers) the system text is not a
//                        summariser's: a normal turn's history with the instruction appended.
//                        The server serves it as sent; it extends the held conversation and
//                        meets its end anchor by itself.
// Anything else is not a compaction request.
#include <optional>
#include <string>
#include <vector>

#include "protocol/chat_message.hpp"

namespace anchorage {

enum class compaction_shape { flattened, anchored, continue_prompt, claude_code, trailing_instruction };

// "flattened", "anchored", "continue_prompt", "claude_code", "trailing_instruction": for logs
// and stats.
const char* compaction_shape_name(compaction_shape s);

struct compaction_request {
  compaction_shape shape = compaction_shape::flattened;
  // The system messages before the first other message, joined with "\n\n"; empty when none.
  std::string system_text;
  // The last user message with every <conversation> ... </conversation> block cut out: the text
  // before and after each block trimmed, the non-empty pieces joined with "\n\n". A
  // <prior-summary> block stays in it, where the client put it.
  std::string instructions;
  // The body of the <prior-summary> block (flattened shape), trimmed; empty when there is none.
  std::string prior_summary;
  // The user lines of the client's history, in order. From a <conversation> block: each
  // "[User]:" entry, decoded when opencode wrote it as a JSON string, else as written (it may
  // span lines) and trimmed. From earlier messages: each user message's content as sent.
  std::vector<std::string> user_lines;
  // The assistant's answers in the same history: each "[Assistant]:" entry (not reasoning,
  // tool calls or results), trimmed, or each earlier assistant message's non-empty content.
  std::vector<std::string> assistant_lines;
  // The history ends with a user message that nothing answers (no assistant entry or message
  // after the last user line): a compaction asked for right after the user typed.
  bool last_user_pending = false;
};

// The shape `messages` has, and what the server needs to serve it; nullopt when it is none of
// the shapes above. `has_tools`: the request defines at least one tool.
std::optional<compaction_request> detect_compaction(const std::vector<chat_message>& messages,
                                                    bool has_tools);

// The guard: how the client's user lines sit in `record_text` (the held conversation's text as
// the server rendered and generated it).
//   holds              every user line, each with its leading and trailing white space removed,
//                      occurs in the record in order, the last one in the record's last user
//                      turn (the last "<|im_start|>user\n" not opening a <tool_response>; no
//                      constraint when the record has no such turn);
//   holds_but_last     at least two lines; every line but the last occurs in order, the one
//                      before the last in the record's last user turn, and the last does not
//                      occur after it: the record ends with the answer to the client's last but
//                      one user message, and the last is one it does not hold yet;
//   fails              anything else, or no user line, or an empty first or last line (an empty
//                      line between them is skipped).
enum class guard_result { fails, holds, holds_but_last };
guard_result compaction_guard_check(const std::vector<std::string>& user_lines,
                                    const std::string& record_text);

// compaction_guard_check(r.user_lines, record_text) == guard_result::holds.
bool compaction_guard(const compaction_request& r, const std::string& record_text);

}  // namespace anchorage
