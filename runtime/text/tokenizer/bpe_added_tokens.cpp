#include "runtime/text/tokenizer/bpe_added_tokens.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer/utf8_stream.hpp"

namespace anchorage {

namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& path, const std::string& problem) {
  throw std::invalid_argument(path + ": " + problem);
}

bool read_flag(const json& item, const char* key, const std::string& path) {
  const auto it = item.find(key);
  if (it == item.end() || it->is_null()) return false;
  if (!it->is_boolean()) refuse(path + "." + key, "expected true or false");
  return it->get<bool>();
}

// Unicode White_Space (what Rust's char::is_whitespace, used by HF for lstrip/rstrip, tests).
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// The length of the white space that ends text[floor, pos).
std::size_t white_space_before(std::string_view text, std::size_t floor, std::size_t pos) {
  std::size_t start = pos;
  while (start > floor) {
    std::size_t lead = start - 1;
    while (lead > floor && start - lead < 4 && (static_cast<unsigned char>(text[lead]) & 0xC0) == 0x80)
      --lead;
    const utf8_sequence seq = next_utf8_sequence(text.substr(0, start), lead);
    if (seq.status != utf8_status::valid || lead + seq.length != start || !is_white_space(seq.code_point))
      break;
    start = lead;
  }
  return pos - start;
}

// The length of the white space that starts text[pos, end).
std::size_t white_space_after(std::string_view text, std::size_t pos) {
  std::size_t end = pos;
  while (end < text.size()) {
    const utf8_sequence seq = next_utf8_sequence(text, end);
    if (seq.status != utf8_status::valid || !is_white_space(seq.code_point)) break;
    end += seq.length;
  }
  return end - pos;
}

bool eligible(const added_token& t, added_token_matching matching, bool normalized_pass) {
  if (t.normalized != normalized_pass) return false;
  switch (matching) {
    case added_token_matching::none:
      return false;
    case added_token_matching::non_special:
      return !t.special;
    case added_token_matching::all:
      return true;
  }
  return false;
}

}  // namespace

added_token_set added_token_set::parse(const json& node) {
  added_token_set set;
  if (node.is_null()) return set;
  if (!node.is_array()) refuse("added_tokens", "expected an array");
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    const json& item = node[i];
    if (!item.is_object()) refuse(path, "expected an object");
    const auto id = item.find("id");
    const auto content = item.find("content");
    if (id == item.end() || !id->is_number_integer() || id->get<long long>() < 0 ||
        id->get<long long>() > 0x7fffffff) {
      refuse(path + ".id", "expected a non-negative integer");
    }
    if (content == item.end() || !content->is_string() || content->get<std::string>().empty()) {
      refuse(path + ".content", "expected a non-empty string");
    }
    if (read_flag(item, "single_word", path)) refuse(path + ".single_word", "true is not supported");
    added_token t;
    t.id = id->get<token_id>();
    t.content = content->get<std::string>();
    t.special = read_flag(item, "special", path);
    t.lstrip = read_flag(item, "lstrip", path);
    t.rstrip = read_flag(item, "rstrip", path);
    t.normalized = read_flag(item, "normalized", path);
    if (!seen.insert(t.content).second) refuse(path + ".content", "\"" + t.content + "\" is added twice");
    set.tokens_.push_back(std::move(t));
  }
  return set;
}

void added_token_set::index() {
  by_length_.clear();
  for (const added_token& t : tokens_) {
    if (t.match_text.empty()) continue;  // normalized to nothing: it can never occur
    by_length_.push_back(&t);
    first_byte_[static_cast<unsigned char>(t.match_text[0])] = true;
    any_normalized_ = any_normalized_ || t.normalized;
  }
  std::stable_sort(by_length_.begin(), by_length_.end(), [](const added_token* a, const added_token* b) {
    return a->match_text.size() > b->match_text.size();
  });
}

const added_token* added_token_set::longest_at(std::string_view text, std::size_t pos,
                                               added_token_matching matching, bool normalized_pass) const {
  for (const added_token* t : by_length_) {
    if (eligible(*t, matching, normalized_pass) &&
        text.compare(pos, t->match_text.size(), t->match_text) == 0)
      return t;
  }
  return nullptr;
}

void added_token_set::split(std::string_view text, added_token_matching matching, bool normalized_pass,
                            std::vector<segment>& out) const {
  std::size_t text_start = 0;  // start of the text not yet emitted
  if (matching != added_token_matching::none && !by_length_.empty()) {
    for (std::size_t pos = 0; pos < text.size();) {
      const added_token* t = first_byte_[static_cast<unsigned char>(text[pos])]
                                 ? longest_at(text, pos, matching, normalized_pass)
                                 : nullptr;
      if (t == nullptr) {
        ++pos;
        continue;
      }
      std::size_t begin = pos, end = pos + t->match_text.size();
      if (t->lstrip) begin -= white_space_before(text, text_start, begin);
      if (t->rstrip) end += white_space_after(text, end);
      if (begin > text_start) out.push_back({text.substr(text_start, begin - text_start), nullptr});
      out.push_back({text.substr(begin, end - begin), t});
      text_start = pos = end;
    }
  }
  if (text_start < text.size()) out.push_back({text.substr(text_start), nullptr});
}

}  // namespace anchorage
