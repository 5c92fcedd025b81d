#include "runtime/text/tokenizer.hpp"

#include <array>
#include <cassert>
#include <stdexcept>
#include <string>

namespace anchorage {

namespace {

// Indexed by id - special_tokens::first.
constexpr std::array<std::string_view, special_tokens::count> special_texts = {
    "<|im_start|>",  "<|im_end|>",  "<think>",      "</think>",        "<|image_pad|>",
    "<|endoftext|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
};

static_assert(special_tokens::first + special_tokens::count == special_tokens::first_reserved);
static_assert(special_tokens::tool_response_close == special_tokens::first_reserved - 1);

// Throws std::out_of_range unless 0 <= id < vocab_size(); `where` is appended to the message.
void check_range(token_id id, const std::string& where) {
  if (id < 0 || id >= vocab_size()) {
    throw std::out_of_range("tokenizer: token id " + std::to_string(id) + where +
                            " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
  }
}

// Appends the bytes of an in-range id.
void append_text(std::string& out, token_id id) {
  assert(id >= 0 && id < vocab_size());
  if (id < 256) {
    out.push_back(static_cast<char>(static_cast<unsigned char>(id)));
  } else if (id < special_tokens::first_reserved) {
    out.append(special_texts[static_cast<std::size_t>(id - special_tokens::first)]);
  }
  // reserved ids: nothing
}

// The longest special string that starts at text[pos], or nullopt.
std::optional<token_id> match_special(std::string_view text, std::size_t pos) {
  std::optional<token_id> best;
  std::size_t best_len = 0;
  const std::string_view rest = text.substr(pos);
  for (std::size_t i = 0; i < special_texts.size(); ++i) {
    const std::string_view s = special_texts[i];
    if (s.size() > best_len && rest.substr(0, s.size()) == s) {
      best = special_tokens::first + static_cast<token_id>(i);
      best_len = s.size();
    }
  }
  return best;
}

}  // namespace

bool is_special(token_id id) { return id >= special_tokens::first && id < special_tokens::first_reserved; }

std::optional<token_id> special_id(std::string_view text) {
  for (std::size_t i = 0; i < special_texts.size(); ++i) {
    if (special_texts[i] == text) return special_tokens::first + static_cast<token_id>(i);
  }
  return std::nullopt;
}

std::string token_text(token_id id) {
  check_range(id, "");
  std::string out;
  append_text(out, id);
  return out;
}

std::vector<token_id> tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<token_id> ids;
  ids.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (parse_special && text[pos] == '<') {  // every special string starts with '<'
      if (const auto id = match_special(text, pos)) {
        ids.push_back(*id);
        pos += special_texts[static_cast<std::size_t>(*id - special_tokens::first)].size();
        continue;
      }
    }
    ids.push_back(static_cast<token_id>(static_cast<unsigned char>(text[pos])));
    ++pos;
  }
  return ids;
}

std::string tokenizer::decode(const std::vector<token_id>& ids) const {
  return decode(ids.data(), ids.size());
}

std::string tokenizer::decode(const token_id* ids, std::size_t count) const {
  assert(ids != nullptr || count == 0);
  std::string out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size()) {
      check_range(ids[i], " at position " + std::to_string(i));
    }
    append_text(out, ids[i]);
  }
  return out;
}

}  // namespace anchorage
