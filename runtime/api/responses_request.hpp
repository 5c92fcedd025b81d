#pragma once
// Parsing and validating the body of an OpenAI Responses request (POST /v1/responses) into the
// chat route's own request (completion_request, kind chat): the conductor, the template and the
// end anchor see a Responses request as the chat request it maps to. The conversation is built
// in two steps because of previous_response_id: parse_responses_request reads this request's own
// input items, and assemble_conversation puts the stored conversation (when there is one) before
// them and the system text first.
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/openai_types.hpp"

namespace anchorage {

// What a response object repeats of its request (OpenAI's response echoes these fields).
struct responses_echo {
  std::optional<std::string> instructions;
  std::optional<long> max_output_tokens;
  std::optional<std::string> previous_response_id;
  std::optional<std::string> effort;  // reasoning.effort as sent
  bool store = true;
  double temperature = 1.0;
  double top_p = 1.0;
  nlohmann::ordered_json tool_choice = "auto";                     // as sent (a string or an object)
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // the function tools, flat, as sent
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
};

struct responses_request {
  // Everything but the conversation: chat.messages is empty until assemble_conversation.
  completion_request chat;
  // This request's input items as chat messages, in order. System and developer messages are
  // kept where they stand (role "system"); assemble_conversation moves their text to the front.
  std::vector<chat_message> input;
  responses_echo echo;
};

// Parses `body` as a Responses request. Never throws for anything a client can send: every
// mistake comes back as a 400 api_error of type "invalid_request_error" whose message says what is
// wrong and whose param names the field ("input[2].content[0].type").
//
// The mapping (null is the same as absent everywhere; unknown fields are ignored):
//   model a string; max_output_tokens an integer >= 1 -> max_tokens; temperature a number in
//   [0, 2]; top_p in (0, 1]; stream and store booleans (store defaults to true);
//   previous_response_id a non-empty string; metadata an object (echoed); user and
//   prompt_cache_key strings (prompt_cache_key keys the session, as on the chat route);
//   text.format, when not {"type":"text"}, is kept as response_format (the response cache keys
//   on it); reasoning {effort: none | minimal -> the template's thinking off; low | medium | high
//   | xhigh | max -> on; absent -> the chat route's default}; reasoning.summary is ignored.
//   instructions a string: the system text's first part (not carried over by
//   previous_response_id, as OpenAI documents).
//   input a non-empty string (one user message) or an array of items:
//     message {role: user | assistant | system | developer, content: string | parts, type?}
//       (type may be absent, as some clients send assistant items). Parts: input_text,
//       output_text and text {text}; refusal {refusal} (assistant); input_image (user, system:
//       an image part). A user message's text parts are joined with "\n" and kept as parts, as on
//       the chat route; an assistant message's text is its parts' texts joined with "\n".
//       system and developer read as role "system".
//     reasoning {content: [{type: reasoning_text, text}], summary: [{type: summary_text, text}],
//       encrypted_content?}: the content texts joined with "\n", else the summary texts, become
//       the assistant's reasoning_content, the field the chat route reads, so the end anchor
//       aligns the echoed answer the same way; an item with neither is skipped;
//       encrypted_content is ignored.
//     function_call {call_id, name, arguments: JSON text (an object is dumped compactly), id?}:
//       a tool call of the assistant message.
//     function_call_output {call_id, output: string | parts (input_text, output_text, text,
//       input_image)}: a message of role tool.
//   Consecutive reasoning, assistant message and function_call items make one assistant message
//   (the shape an answer comes out in: reasoning, text, calls): a reasoning item opens a new one
//   when the open one already has text or calls, a message item when it already has calls. Any
//   other item closes it. Other item types (item_reference, custom_tool_call, ...) are refused.
//   tools an array; {type: function, name, description?, parameters?} -> the chat route's
//   {"type":"function","function":{"name","description","parameters"}} (strict is ignored);
//   tools of other types (web_search, namespace, custom, ...: tools this server cannot run) are
//   dropped.
//   tool_choice auto | none | required | {type: function, name (one of the tools)} |
//   {type: allowed_tools, mode: auto | required} -> auto | none | required | function:NAME.
//   required needs a tool.
// JSON nested deeper than 512 levels is rejected.
std::variant<responses_request, api_error> parse_responses_request(std::string_view body);

// Sets r.chat.messages: one system message (instructions, then the text of every system item of
// `prior` and of r.input in order, joined with "\n"; none when all are empty), then the other
// messages of `prior` and of r.input in order. `prior` is the conversation previous_response_id
// names (empty without one). An api_error (400, param "input") when no user, assistant or tool
// message is left.
std::optional<api_error> assemble_conversation(responses_request& r, const std::vector<chat_message>& prior);

// The assistant message an answer is, as the conversation holds it: what parse_responses_request
// makes of the answer's output items sent back (reasoning_content when there is reasoning,
// content, the tool calls).
chat_message answer_message(const assistant_output& output);

}  // namespace anchorage
