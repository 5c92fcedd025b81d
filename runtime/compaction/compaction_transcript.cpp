#include "runtime/compaction/compaction_transcript.hpp"

#include <nlohmann/json.hpp>

namespace anchorage::compaction_transcript {

namespace {

constexpr std::string_view open_tag = "<conversation>";
constexpr std::string_view close_tag = "</conversation>";
constexpr std::size_t max_label = 32;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_label_char(char c) { return is_upper(c) || (c >= 'a' && c <= 'z') || c == ' '; }

// Where `tag` next opens a line of `text` at or after `from`; npos when nowhere.
std::size_t find_at_line_start(std::string_view text, std::string_view tag, std::size_t from) {
  for (std::size_t at = text.find(tag, from); at != std::string_view::npos; at = text.find(tag, at + 1)) {
    if (at == 0 || text[at - 1] == '\n') return at;
  }
  return std::string_view::npos;
}

// The label when `line` opens an entry ("[User]: ..." or "[User]:" alone), with `rest` set to
// the text after the colon and its one space; empty when it does not.
std::string_view entry_label(std::string_view line, std::string_view& rest) {
  if (line.size() < 4 || line[0] != '[' || !is_upper(line[1])) return {};
  const std::size_t close = line.find("]:");
  if (close == std::string_view::npos || close - 1 > max_label) return {};
  for (std::size_t i = 1; i < close; ++i) {
    if (!is_label_char(line[i])) return {};
  }
  rest = line.substr(close + 2);
  if (!rest.empty() && rest[0] != ' ') return {};
  if (!rest.empty()) rest.remove_prefix(1);
  return line.substr(1, close - 1);
}

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<block> find_blocks(std::string_view text) { return find_blocks(text, open_tag, close_tag); }

std::size_t count_line_tags(std::string_view text, std::string_view tag) {
  std::size_t n = 0;
  for (std::size_t at = find_at_line_start(text, tag, 0); at != std::string_view::npos;
       at = find_at_line_start(text, tag, at + tag.size()))
    ++n;
  return n;
}

std::vector<block> find_blocks(std::string_view text, std::string_view opening, std::string_view closing) {
  std::vector<block> out;
  std::size_t from = 0;
  while (true) {
    const std::size_t open = find_at_line_start(text, opening, from);
    if (open == std::string_view::npos) break;
    const std::size_t body = open + opening.size();
    const std::size_t close = find_at_line_start(text, closing, body);
    if (close == std::string_view::npos) break;
    out.push_back({open, close + closing.size(), text.substr(body, close - body)});
    from = close + closing.size();
  }
  return out;
}

std::string cut_blocks(std::string_view text, const std::vector<block>& blocks) {
  std::string out;
  auto keep = [&out](std::string_view piece) {
    piece = trim(piece);
    if (piece.empty()) return;
    if (!out.empty()) out += "\n\n";
    out += piece;
  };
  std::size_t from = 0;
  for (const block& b : blocks) {
    keep(text.substr(from, b.begin - from));
    from = b.end;
  }
  keep(text.substr(from));
  return out;
}

std::vector<entry> read_entries(std::string_view body) {
  std::vector<entry> out;
  bool in_entry = false;
  std::size_t pos = 0;
  while (pos <= body.size()) {
    const std::size_t eol = body.find('\n', pos);
    const std::size_t end = eol == std::string_view::npos ? body.size() : eol;
    const std::string_view line = body.substr(pos, end - pos);
    std::string_view rest;
    const std::string_view label = entry_label(line, rest);
    if (!label.empty()) {
      out.push_back({std::string(label), std::string(rest)});
      in_entry = true;
    } else if (in_entry) {
      out.back().text += '\n';
      out.back().text += line;
    }
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  return out;
}

std::string user_text(std::string_view entry_text) {
  const std::string_view t = trim(entry_text);
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') {
    const nlohmann::json v = nlohmann::json::parse(t, nullptr, /*allow_exceptions=*/false);
    if (v.is_string()) return v.get<std::string>();
  }
  return std::string(t);
}

}  // namespace anchorage::compaction_transcript
