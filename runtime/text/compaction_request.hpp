#pragma once
// Recognising a client's compaction request (issue 15, item 1) and the guard that decides whether
// it may be served as the continuation of the conversation the server holds (item 3). Pure
// functions over the messages as the OpenAI edge read them; no state, thread-safe.
//
// The shapes, with the openers matched exactly after leading white space (docs/COMPACTION.md):
//   flattened            system text opening "You are a context summarization agent." or
//                        "You are an anchored context summarization assistant", no tools, and
//                        as its only other message one user message opening "Here is the
//                        conversation so far:" with a <conversation> ... </conversation> block,
//                        the text after the block asking for an "anchored summary" (any case).
//   anchored             the last message a user message opening "Create a new anchored summary"
//                        or "Update the anchored summary below", with that system text and no
//                        tools; the transcript in a <conversation> block of any user message, or
//                        else the earlier messages themselves.
//   continue_prompt      earlier messages with at least one user message, then a last user
//                        message opening "Provide a detailed prompt for continuing our
//                        conversation above.", no tools (any system text: opencode's older
//                        compaction agents sent their own).
//   trailing_instruction the last user message opens with one of the anchored or continue
//                        openers after a history with at least one user message, and tools are
//                        present or (anchored openers) the system text is not a summariser's:
//                        a normal turn's history with the instruction appended. The server
//                        serves it as sent; it extends the held conversation and meets its end
//                        anchor by itself.
// Anything else is not a compaction request.
#include <optional>
#include <string>
#include <vector>

#include "protocol/chat_message.hpp"

namespace anchorage {

enum class compaction_shape { flattened, anchored, continue_prompt, trailing_instruction };

// "flattened", "anchored", "continue_prompt", "trailing_instruction": for logs and stats.
const char* compaction_shape_name(compaction_shape s);

struct compaction_request {
  compaction_shape shape = compaction_shape::flattened;
  // The system messages before the first other message, joined with "\n\n"; empty when none.
  std::string system_text;
  // The last user message with every <conversation> ... </conversation> block cut out: the text
  // before and after each block trimmed, the non-empty pieces joined with "\n\n".
  std::string instructions;
  // The user lines of the client's history, in order. From a <conversation> block: each
  // "[User]:" entry, decoded when opencode wrote it as a JSON string, else as written (it may
  // span lines) and trimmed. From earlier messages: each user message's content as sent.
  std::vector<std::string> user_lines;
  // The assistant's answers in the same history: each "[Assistant]:" entry (not reasoning,
  // tool calls or results), trimmed, or each earlier assistant message's non-empty content.
  std::vector<std::string> assistant_lines;
};

// The shape `messages` has, and what the server needs to serve it; nullopt when it is none of
// the shapes above. `has_tools`: the request defines at least one tool.
std::optional<compaction_request> detect_compaction(const std::vector<chat_message>& messages,
                                                    bool has_tools);

// True when the first and the last of r.user_lines, each with its leading and trailing white
// space removed, both occur in `record_text` (the held conversation's text as the server
// rendered and generated it). False when there is no user line or either is empty.
bool compaction_guard(const compaction_request& r, const std::string& record_text);

}  // namespace anchorage
