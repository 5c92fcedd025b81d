#pragma once
// opencode's compaction requests built from a conversation the way opencode 1.18.33 builds them
// (tests/support/clients/opencode-1.18.33/compaction.json is one it sent): its compaction
// agent's system text, and the history flattened into one user message, each user text written
// as a JSON string ("[User]: \"...\""), each answer as "[Assistant reasoning]:" and
// "[Assistant]:" lines. Also the other shapes opencode has sent (runtime/compaction/compaction_request.hpp).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/chat_message.hpp"
#include "runtime/compaction/opencode_compaction.hpp"

namespace anchorage::testing {

struct opencode_turn {
  std::string user;
  std::string reasoning;  // empty: no reasoning line
  std::string answer;
};

// The system text of opencode 1.18.33's compaction agent, as captured (the runtime's copy).
inline const std::string& opencode_compaction_system = opencode_compaction_system_text();

// The instructions after the transcript, for a first compaction (shortened: the template's
// sections and rules are left out).
inline const std::string opencode_create_instructions =
    "Create a new anchored summary from the conversation history in the <conversation> tags above so another "
    "coding agent can continue the work.\n\nOutput exactly the Markdown structure shown inside <template> "
    "and "
    "keep the section order unchanged.\n<template>\n## Objective\n- [one or two brief "
    "sentences]\n</template>";

// The instructions when an earlier summary exists.
inline std::string opencode_update_instructions(const std::string& previous_summary) {
  return "Update the anchored summary below using the conversation history above.\nPreserve still-true "
         "details, remove stale details, and merge in the new facts.\n<previous-summary>\n" +
         previous_summary + "\n</previous-summary>";
}

// The user message of opencode's older compaction, after the original messages.
inline const std::string opencode_continue_prompt =
    "Provide a detailed prompt for continuing our conversation above. Focus on information that would be "
    "helpful for continuing the conversation, including what we did, what we're doing, which files we're "
    "working on, and what we're going to do next considering new session will not have access to our "
    "conversation.";

// The turns as opencode writes them inside <conversation>.
inline std::string opencode_flatten(const std::vector<opencode_turn>& turns) {
  std::string out;
  for (const opencode_turn& t : turns) {
    if (!out.empty()) out += "\n\n";
    out += "[User]: " + nlohmann::json(t.user).dump();
    out += "\n\n";
    if (!t.reasoning.empty()) out += "[Assistant reasoning]: " + t.reasoning + "\n";
    out += "[Assistant]: " + t.answer;
  }
  return out;
}

// The one user message of a flattened compaction.
inline std::string opencode_flattened_text(const std::vector<opencode_turn>& turns,
                                           const std::string& instructions = opencode_create_instructions) {
  return "Here is the conversation so far:\n\n<conversation>\n" + opencode_flatten(turns) +
         "\n</conversation>\n\n" + instructions;
}

// The instructions of opencode's repeat compaction (a conversation it compacted before): the
// earlier summary after the transcript, then a request to combine the two, then the template.
// No such request was captured (tests/support/clients/ has the first compaction only); the words
// follow third-party copies of opencode's prompt builder, shortened like the ones above.
inline std::string opencode_repeat_instructions(const std::string& prior_summary) {
  return "Here is the summary of the conversation before the <conversation> above:\n\n<prior-summary>\n" +
         prior_summary +
         "\n</prior-summary>\n\nThe <prior-summary> summarizes everything that happened before the "
         "<conversation>. Construct a new summary that combines both. The <prior-summary> is discarded after "
         "this: anything you do not carry into the new summary is lost.\n\nOutput exactly the Markdown "
         "structure shown inside <template> and keep the section order unchanged.\n<template>\n## "
         "Objective\n- [one or two brief sentences]\n</template>";
}

inline chat_message opencode_message(std::string role, std::string content) {
  chat_message m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

// The messages of a flattened compaction request (sent with no tools).
inline std::vector<chat_message> opencode_flattened_request(
    const std::vector<opencode_turn>& turns, const std::string& instructions = opencode_create_instructions) {
  return {opencode_message("system", opencode_compaction_system),
          opencode_message("user", opencode_flattened_text(turns, instructions))};
}

// The turns as ordinary messages after `system`: user, assistant (with its reasoning), ...
inline std::vector<chat_message> opencode_history(const std::string& system,
                                                  const std::vector<opencode_turn>& turns) {
  std::vector<chat_message> out;
  if (!system.empty()) out.push_back(opencode_message("system", system));
  for (const opencode_turn& t : turns) {
    out.push_back(opencode_message("user", t.user));
    chat_message a = opencode_message("assistant", t.answer);
    if (!t.reasoning.empty()) a.reasoning_content = t.reasoning;
    out.push_back(std::move(a));
  }
  return out;
}

// The messages as an OpenAI "messages" array (role, content and reasoning_content).
inline nlohmann::json opencode_messages_json(const std::vector<chat_message>& messages) {
  nlohmann::json out = nlohmann::json::array();
  for (const chat_message& m : messages) {
    nlohmann::json j = {{"role", m.role}, {"content", m.content}};
    if (m.reasoning_content) j["reasoning_content"] = *m.reasoning_content;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace anchorage::testing
