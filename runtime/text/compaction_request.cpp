#include "runtime/text/compaction_request.hpp"

#include <string_view>

#include "runtime/text/compaction_transcript.hpp"

namespace anchorage {

namespace {

namespace ct = compaction_transcript;

constexpr std::string_view summariser_openers[] = {"You are a context summarization agent.",
                                                   "You are an anchored context summarization assistant"};
constexpr std::string_view flattened_opener = "Here is the conversation so far:";
constexpr std::string_view anchored_openers[] = {"Create a new anchored summary",
                                                 "Update the anchored summary below"};
constexpr std::string_view continue_opener =
    "Provide a detailed prompt for continuing our conversation above.";
constexpr std::string_view anchored_request = "anchored summary";

bool opens_with(std::string_view text, std::string_view opener) {
  text = ct::trim(text);
  return text.substr(0, opener.size()) == opener;
}

template <std::size_t n>
bool opens_with_any(std::string_view text, const std::string_view (&openers)[n]) {
  for (std::string_view o : openers) {
    if (opens_with(text, o)) return true;
  }
  return false;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// `needle` (lower case) in `hay`, ignoring the case of ASCII letters.
bool contains_ignoring_case(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t at = 0; at + needle.size() <= hay.size(); ++at) {
    std::size_t i = 0;
    while (i < needle.size() && lower(hay[at + i]) == needle[i]) ++i;
    if (i == needle.size()) return true;
  }
  return false;
}

// The messages around the last one: the leading system messages and those after them.
struct history {
  std::string system_text;
  std::size_t first_other = 0;  // the first message that is not a leading system message
  std::size_t last = 0;         // the last message's index
  std::size_t earlier_users = 0;
};

history read_history(const std::vector<chat_message>& messages) {
  history h;
  h.last = messages.size() - 1;
  while (h.first_other < h.last && messages[h.first_other].role == "system") {
    if (!h.system_text.empty()) h.system_text += "\n\n";
    h.system_text += messages[h.first_other].content;
    ++h.first_other;
  }
  for (std::size_t i = h.first_other; i < h.last; ++i) {
    if (messages[i].role == "user") ++h.earlier_users;
  }
  return h;
}

// The user and assistant lines of the blocks' entries, appended to r.
void lines_from_blocks(const std::vector<ct::block>& blocks, compaction_request& r) {
  for (const ct::block& b : blocks) {
    for (const ct::entry& e : ct::read_entries(b.body)) {
      if (e.label == "User") r.user_lines.push_back(ct::user_text(e.text));
      if (e.label == "Assistant") r.assistant_lines.emplace_back(ct::trim(e.text));
    }
  }
}

// The user and assistant lines of the messages before the last one.
void lines_from_messages(const std::vector<chat_message>& messages, const history& h, compaction_request& r) {
  for (std::size_t i = h.first_other; i < h.last; ++i) {
    const chat_message& m = messages[i];
    if (m.role == "user") r.user_lines.push_back(m.content);
    if (m.role == "assistant" && !m.content.empty()) r.assistant_lines.push_back(m.content);
  }
}

// Every <conversation> block of the user messages after the system text, in order.
std::vector<ct::block> user_blocks(const std::vector<chat_message>& messages, const history& h) {
  std::vector<ct::block> out;
  for (std::size_t i = h.first_other; i <= h.last; ++i) {
    if (messages[i].role != "user") continue;
    for (const ct::block& b : ct::find_blocks(messages[i].content)) out.push_back(b);
  }
  return out;
}

}  // namespace

const char* compaction_shape_name(compaction_shape s) {
  switch (s) {
    case compaction_shape::flattened:
      return "flattened";
    case compaction_shape::anchored:
      return "anchored";
    case compaction_shape::continue_prompt:
      return "continue_prompt";
    case compaction_shape::trailing_instruction:
      return "trailing_instruction";
  }
  return "unknown";
}

std::optional<compaction_request> detect_compaction(const std::vector<chat_message>& messages,
                                                    bool has_tools) {
  if (messages.empty() || messages.back().role != "user") return std::nullopt;
  const history h = read_history(messages);
  const std::string& text = messages.back().content;
  const bool summariser = opens_with_any(h.system_text, summariser_openers);

  compaction_request r;
  r.system_text = h.system_text;
  const std::vector<ct::block> own_blocks = ct::find_blocks(text);
  r.instructions = ct::cut_blocks(text, own_blocks);

  if (opens_with(text, flattened_opener)) {
    if (!summariser || has_tools || h.first_other != h.last || own_blocks.empty()) return std::nullopt;
    const std::string_view after = std::string_view(text).substr(own_blocks.front().end);
    if (!contains_ignoring_case(after, anchored_request)) return std::nullopt;
    r.shape = compaction_shape::flattened;
    lines_from_blocks(own_blocks, r);
    return r;
  }
  if (opens_with_any(text, anchored_openers)) {
    if (summariser && !has_tools) {
      r.shape = compaction_shape::anchored;
      const std::vector<ct::block> blocks = user_blocks(messages, h);
      if (blocks.empty()) {
        lines_from_messages(messages, h, r);
      } else {
        lines_from_blocks(blocks, r);
      }
      return r;
    }
    if (h.earlier_users == 0) return std::nullopt;
    r.shape = compaction_shape::trailing_instruction;
    lines_from_messages(messages, h, r);
    return r;
  }
  if (opens_with(text, continue_opener)) {
    if (h.earlier_users == 0) return std::nullopt;
    r.shape = has_tools ? compaction_shape::trailing_instruction : compaction_shape::continue_prompt;
    lines_from_messages(messages, h, r);
    return r;
  }
  return std::nullopt;
}

bool compaction_guard(const compaction_request& r, const std::string& record_text) {
  if (r.user_lines.empty()) return false;
  const std::string_view first = ct::trim(r.user_lines.front());
  const std::string_view last = ct::trim(r.user_lines.back());
  if (first.empty() || last.empty()) return false;
  return record_text.find(first) != std::string::npos && record_text.find(last) != std::string::npos;
}

}  // namespace anchorage
