#include "runtime/text/tokenizer/tokenizer.hpp"

#include <array>
#include <cassert>
#include <stdexcept>
#include <string>

#include "runtime/text/tokenizer/bpe_tokenizer.hpp"

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

namespace {

std::vector<token_id> byte_encode(std::string_view text, bool parse_special) {
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

std::string byte_decode(const token_id* ids, std::size_t count) {
  assert(ids != nullptr || count == 0);
  std::string out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (is_image_row(ids[i])) {
      if (i == 0 || !is_image_row(ids[i - 1])) out.append(image_rows_text);
      continue;
    }
    if (ids[i] < 0 || ids[i] >= vocab_size()) {
      check_range(ids[i], " at position " + std::to_string(i));
    }
    append_text(out, ids[i]);
  }
  return out;
}

bool whitespace_bytes(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c != ' ' && c != '\n' && c != '\t' && c != '\r') return false;
  return true;
}

}  // namespace

struct tokenizer::state {
  std::optional<bpe_tokenizer> bpe;  // none: the byte tokenizer
  std::string name = "byte";
  chat_ids ids;
  std::vector<bool> whitespace;  // by id
  std::vector<bool> added;       // by id, BPE only: an added token
  std::shared_ptr<const std::vector<bool>> defined;
};

tokenizer::tokenizer() {
  static const std::shared_ptr<const state> byte = [] {
    auto s = std::make_shared<state>();
    s->defined =
        std::make_shared<const std::vector<bool>>(static_cast<std::size_t>(anchorage::vocab_size()), true);
    s->whitespace.assign(static_cast<std::size_t>(anchorage::vocab_size()), false);
    for (char c : std::string_view(" \n\t\r")) s->whitespace[static_cast<unsigned char>(c)] = true;
    return s;
  }();
  s_ = byte;
}

tokenizer tokenizer::from_json_file(const std::string& path) {
  const bpe_tokenizer b = bpe_tokenizer::from_file(path);
  return from_bpe(b);
}

tokenizer tokenizer::from_json(const nlohmann::json& document, const std::string& name) {
  return from_bpe(bpe_tokenizer::from_json(document, name));
}

tokenizer tokenizer::from_bpe(const bpe_tokenizer& b) {
  auto s = std::make_shared<state>();
  s->bpe = b;
  s->name = b.path();
  const auto lookup = [&](std::string_view text, bool required) {
    const auto id = b.special_id(text);
    if (!id && required) {
      throw tokenizer_file_error("tokenizer file '" + b.path() + "': the chat token " + std::string(text) +
                                 " is not one of its added tokens");
    }
    return id.value_or(no_token);
  };
  chat_ids& c = s->ids;
  c.im_start = lookup("<|im_start|>", true);
  c.im_end = lookup("<|im_end|>", true);
  c.endoftext = lookup("<|endoftext|>", false);
  c.think_open = lookup("<think>", false);
  c.think_close = lookup("</think>", false);
  c.tool_call_open = lookup("<tool_call>", false);
  c.tool_call_close = lookup("</tool_call>", false);
  c.tool_response_open = lookup("<tool_response>", false);
  c.tool_response_close = lookup("</tool_response>", false);
  c.image_pad = lookup("<|image_pad|>", false);
  const auto n = static_cast<std::size_t>(b.vocab_size());
  auto defined = std::make_shared<std::vector<bool>>(n, false);
  s->whitespace.assign(n, false);
  for (token_id id = 0; id < b.vocab_size(); ++id) {
    if (!b.is_defined(id)) continue;
    (*defined)[static_cast<std::size_t>(id)] = true;
    s->whitespace[static_cast<std::size_t>(id)] = whitespace_bytes(b.token_bytes(id));
  }
  s->added.assign(n, false);
  for (const added_token& a : b.added_tokens()) {
    s->whitespace[static_cast<std::size_t>(a.id)] = false;
    s->added[static_cast<std::size_t>(a.id)] = true;
  }
  s->defined = std::move(defined);
  return tokenizer(std::move(s));
}

bool tokenizer::is_byte_level() const { return !s_->bpe; }

const bpe_tokenizer* tokenizer::bpe() const { return s_->bpe ? &*s_->bpe : nullptr; }

const std::string& tokenizer::name() const { return s_->name; }

const chat_ids& tokenizer::ids() const { return s_->ids; }

std::vector<token_id> tokenizer::encode(std::string_view text, bool parse_special) const {
  return s_->bpe ? s_->bpe->encode(text, parse_special) : byte_encode(text, parse_special);
}

std::vector<token_id> tokenizer::encode_bytes(std::string_view bytes) const {
  if (s_->bpe) return s_->bpe->encode_bytes(bytes);
  std::vector<token_id> out;
  out.reserve(bytes.size());
  for (char c : bytes) out.push_back(static_cast<token_id>(static_cast<unsigned char>(c)));
  return out;
}

std::string tokenizer::decode(const std::vector<token_id>& ids) const {
  return decode(ids.data(), ids.size());
}

std::string tokenizer::decode(const token_id* ids, std::size_t count) const {
  return s_->bpe ? s_->bpe->decode(ids, count) : byte_decode(ids, count);
}

int tokenizer::vocab_size() const { return s_->bpe ? s_->bpe->vocab_size() : anchorage::vocab_size(); }

bool tokenizer::is_defined(token_id id) const {
  return s_->bpe ? s_->bpe->is_defined(id) : id >= 0 && id < anchorage::vocab_size();
}

bool tokenizer::is_special(token_id id) const {
  if (!s_->bpe) return anchorage::is_special(id);
  return id >= 0 && static_cast<std::size_t>(id) < s_->added.size() &&
         s_->added[static_cast<std::size_t>(id)];
}

std::optional<token_id> tokenizer::special_id(std::string_view text) const {
  return s_->bpe ? s_->bpe->special_id(text) : anchorage::special_id(text);
}

std::string tokenizer::token_text(token_id id) const {
  return s_->bpe ? s_->bpe->token_bytes(id) : anchorage::token_text(id);
}

bool tokenizer::is_whitespace(token_id id) const {
  return id >= 0 && static_cast<std::size_t>(id) < s_->whitespace.size() &&
         s_->whitespace[static_cast<std::size_t>(id)];
}

const std::shared_ptr<const std::vector<bool>>& tokenizer::defined_mask() const { return s_->defined; }

}  // namespace anchorage
