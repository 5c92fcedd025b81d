#include "runtime/compaction/compaction_request.hpp"

#include <algorithm>
#include <string_view>

#include "runtime/compaction/compaction_transcript.hpp"

namespace anchorage {

namespace {

namespace ct = compaction_transcript;

constexpr std::string_view summariser_openers[] = {"You are a context summarization agent.",
                                                   "You are an anchored context summarization assistant"};
constexpr std::string_view anchored_openers[] = {"Create a new anchored summary",
                                                 "Update the anchored summary below"};
constexpr std::string_view continue_opener =
    "Provide a detailed prompt for continuing our conversation above.";
constexpr std::string_view claude_code_opener = "Your task is to create a detailed summary of";
constexpr std::string_view claude_code_preamble = "CRITICAL: Respond with TEXT ONLY.";
constexpr std::string_view prior_open = "<prior-summary>";
constexpr std::string_view prior_close = "</prior-summary>";
constexpr std::string_view conversation_open = "<conversation>";
constexpr std::string_view user_turn = "<|im_start|>user\n";
constexpr std::string_view tool_response = "<tool_response>";

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

// Claude Code's compaction instruction: the text opens with it, or with its "text only"
// preamble and then a line that opens with it.
bool opens_claude_code(std::string_view text) {
  text = ct::trim(text);
  if (opens_with(text, claude_code_opener)) return true;
  if (!opens_with(text, claude_code_preamble)) return false;
  for (std::size_t at = text.find(claude_code_opener); at != std::string_view::npos;
       at = text.find(claude_code_opener, at + 1)) {
    if (text[at - 1] == '\n') return true;
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

// The user and assistant lines of the blocks' entries, appended to r; whether an entry of the
// assistant (its answer, reasoning or tool call) or a tool's follows the last user entry.
void lines_from_blocks(const std::vector<ct::block>& blocks, compaction_request& r) {
  for (const ct::block& b : blocks) {
    for (const ct::entry& e : ct::read_entries(b.body)) {
      if (e.label == "User") {
        r.user_lines.push_back(ct::user_text(e.text));
        r.last_user_pending = true;
      } else if (e.label.rfind("Assistant", 0) == 0 || e.label.rfind("Tool", 0) == 0) {
        r.last_user_pending = false;
      }
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
    if (m.role == "user" || m.role == "assistant" || m.role == "tool") r.last_user_pending = m.role == "user";
  }
}

// The flattened shape, by structure: exactly one <conversation> block, closed, holding at least
// one "[User]:" entry; at most one <prior-summary> block, closed and after the conversation
// block; instructions after the conversation block other than the prior summary.
bool read_flattened(std::string_view text, compaction_request& r) {
  const std::vector<ct::block> blocks = ct::find_blocks(text);
  if (blocks.size() != 1 || ct::count_line_tags(text, conversation_open) != 1) return false;
  const ct::block& conversation = blocks.front();
  const std::vector<ct::block> priors = ct::find_blocks(text, prior_open, prior_close);
  if (priors.size() > 1 || priors.size() != ct::count_line_tags(text, prior_open)) return false;
  if (!priors.empty() && priors.front().begin < conversation.end) return false;
  const std::string_view after = text.substr(conversation.end);
  std::vector<ct::block> after_priors;
  for (const ct::block& p : priors)
    after_priors.push_back({p.begin - conversation.end, p.end - conversation.end, p.body});
  if (ct::cut_blocks(after, after_priors).empty()) return false;
  compaction_request c = r;
  lines_from_blocks(blocks, c);
  if (c.user_lines.empty()) return false;
  if (!priors.empty()) c.prior_summary = std::string(ct::trim(priors.front().body));
  c.shape = compaction_shape::flattened;
  r = std::move(c);
  return true;
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
    case compaction_shape::claude_code:
      return "claude_code";
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
  const bool continue_prompt = opens_with(text, continue_opener);
  if (continue_prompt || opens_claude_code(text)) {
    if (h.earlier_users == 0) return std::nullopt;
    r.shape = has_tools         ? compaction_shape::trailing_instruction
              : continue_prompt ? compaction_shape::continue_prompt
                                : compaction_shape::claude_code;
    lines_from_messages(messages, h, r);
    return r;
  }
  // A flattened transcript: a compaction agent's system text, then only this message.
  if (h.system_text.empty() || has_tools || h.first_other != h.last) return std::nullopt;
  if (!read_flattened(text, r)) return std::nullopt;
  return r;
}

namespace {

// Where the record's last user turn opens (a tool's response is rendered as a user turn that
// opens with <tool_response>, and is not one); 0 when the record shows no user turn.
std::size_t last_user_turn(std::string_view record) {
  for (std::size_t at = record.rfind(user_turn); at != std::string_view::npos;
       at = at == 0 ? std::string_view::npos : record.rfind(user_turn, at - 1)) {
    if (record.substr(at + user_turn.size(), tool_response.size()) != tool_response) return at;
  }
  return 0;
}

}  // namespace

guard_result compaction_guard_check(const std::vector<std::string>& user_lines,
                                    const std::string& record_text) {
  if (user_lines.empty()) return guard_result::fails;
  const std::string_view first = ct::trim(user_lines.front());
  const std::string_view last = ct::trim(user_lines.back());
  if (first.empty() || last.empty()) return guard_result::fails;
  const std::string_view record = record_text;
  const std::size_t last_turn = last_user_turn(record);
  // Every line but the last, in order; `before` is where the last of them was found.
  std::size_t pos = 0;
  std::size_t before = std::string_view::npos;
  for (std::size_t i = 0; i + 1 < user_lines.size(); ++i) {
    const std::string_view line = ct::trim(user_lines[i]);
    if (line.empty()) continue;
    const std::size_t at = record.find(line, pos);
    if (at == std::string_view::npos) return guard_result::fails;
    before = at;
    pos = at + line.size();
  }
  if (record.find(last, std::max(pos, last_turn)) != std::string_view::npos) return guard_result::holds;
  if (before != std::string_view::npos && before >= last_turn &&
      record.find(last, pos) == std::string_view::npos)
    return guard_result::holds_but_last;
  return guard_result::fails;
}

bool compaction_guard(const compaction_request& r, const std::string& record_text) {
  return compaction_guard_check(r.user_lines, record_text) == guard_result::holds;
}

}  // namespace anchorage
