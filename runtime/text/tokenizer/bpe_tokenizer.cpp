#include "runtime/text/tokenizer/bpe_tokenizer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer/bpe_model.hpp"
#include "runtime/text/tokenizer/bpe_pretokenizer.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

namespace {

enum class token_kind : unsigned char { undefined, vocab, added, special };

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) throw std::invalid_argument("cannot read the file");
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string("not valid JSON: ") + e.what());
  }
}

const nlohmann::json& member_or_null(const nlohmann::json& root, const char* key) {
  static const nlohmann::json null_value;
  const auto it = root.find(key);
  return it == root.end() ? null_value : *it;
}

}  // namespace

struct bpe_tokenizer::tables {
  std::string path;
  bpe_model model;
  text_normalizer normalizer;
  bpe_pretokenizer pretokenizer;
  added_token_set added;
  std::vector<std::string> bytes;  // by id: the vocabulary's bytes, or an added token's content
  std::vector<token_kind> kind;    // by id
  std::unordered_map<std::string, token_id> added_by_content;
};

bpe_tokenizer bpe_tokenizer::from_file(const std::string& path) {
  nlohmann::json root;
  try {
    root = read_json(path);
  } catch (const std::exception& e) {
    throw tokenizer_file_error("tokenizer file '" + path + "': " + e.what());
  }
  return from_json(root, path);
}

namespace {

// Each added token has an id of its own: no other added token's, and no vocabulary token's
// unless it is that token (the same bytes). Otherwise decode would give one token's text for
// another's id. Throws std::invalid_argument naming the entry (added_tokens[i] in file order).
void check_added_ids(const std::vector<added_token>& added, const bpe_model& model) {
  std::unordered_map<token_id, std::size_t> first;
  for (std::size_t i = 0; i < added.size(); ++i) {
    const added_token& a = added[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "].id: id " + std::to_string(a.id);
    if (const auto [at, fresh] = first.emplace(a.id, i); !fresh)
      throw std::invalid_argument(where + " is given twice (added_tokens[" + std::to_string(at->second) +
                                  "] has it)");
    if (model.has(a.id) && model.bytes(a.id) != a.content)
      throw std::invalid_argument(where + " is the vocabulary's token for other text");
  }
}

}  // namespace

bpe_tokenizer bpe_tokenizer::from_json(const nlohmann::json& root, const std::string& path) {
  auto t = std::make_shared<tables>();
  t->path = path;
  try {
    if (!root.is_object()) throw std::invalid_argument("expected a JSON object at the top level");
    t->model = bpe_model::from_json(member_or_null(root, "model"));
    t->normalizer = text_normalizer::from_json(member_or_null(root, "normalizer"));
    t->pretokenizer = bpe_pretokenizer::from_json(member_or_null(root, "pre_tokenizer"));
    const text_normalizer& normalizer = t->normalizer;
    t->added = added_token_set::from_json(member_or_null(root, "added_tokens"),
                                          [&](const std::string& s) { return normalizer.apply(s); });
    check_added_ids(t->added.tokens(), t->model);
    const nlohmann::json& decoder = member_or_null(root, "decoder");
    if (!decoder.is_null() && decoder.value("type", std::string()) != "ByteLevel") {
      throw std::invalid_argument("decoder: type " + decoder.value("type", decoder.dump()) +
                                  " is not supported (only ByteLevel or null)");
    }
  } catch (const std::exception& e) {  // invalid_argument from the readers, runtime_error from utf8proc
    throw tokenizer_file_error("tokenizer file '" + path + "': " + e.what());
  }
  token_id size = t->model.size();
  for (const added_token& a : t->added.tokens()) size = std::max(size, a.id + 1);
  t->bytes.resize(static_cast<std::size_t>(size));
  t->kind.assign(static_cast<std::size_t>(size), token_kind::undefined);
  for (token_id id = 0; id < t->model.size(); ++id) {
    if (!t->model.has(id)) continue;
    t->bytes[static_cast<std::size_t>(id)] = t->model.bytes(id);
    t->kind[static_cast<std::size_t>(id)] = token_kind::vocab;
  }
  for (const added_token& a : t->added.tokens()) {
    t->bytes[static_cast<std::size_t>(a.id)] = a.content;
    t->kind[static_cast<std::size_t>(a.id)] = a.special ? token_kind::special : token_kind::added;
    t->added_by_content.emplace(a.content, a.id);
  }
  return bpe_tokenizer(std::move(t));
}

std::vector<token_id> bpe_tokenizer::encode(std::string_view text, bool parse_special) const {
  return encode(text, parse_special ? added_token_matching::all : added_token_matching::none);
}

std::vector<token_id> bpe_tokenizer::encode(std::string_view text, added_token_matching matching) const {
  std::vector<token_id> out;
  out.reserve(text.size() / 3 + 4);
  thread_local std::vector<added_token_set::segment> segments;
  segments.clear();
  t_->added.split(text, matching, /*normalized_pass=*/false, segments);
  for (const auto& s : segments) {  // encode_text leaves `segments` alone
    if (s.token != nullptr) {
      out.push_back(s.token->id);
    } else {
      encode_text(s.text, matching, out);
    }
  }
  return out;
}

// Normalizes `text` (a stretch between non-normalized added tokens), splits out normalized added
// tokens, and BPE-encodes the pieces of the rest.
std::vector<token_id> bpe_tokenizer::encode_bytes(std::string_view bytes) const {
  std::vector<token_id> out;
  if (!bytes.empty()) t_->model.encode_word(bytes, out);
  return out;
}

void bpe_tokenizer::encode_text(std::string_view text, added_token_matching matching,
                                std::vector<token_id>& out) const {
  const std::string normalized = t_->normalizer.apply(text);
  std::vector<added_token_set::segment> segments;
  if (t_->added.any_normalized()) {
    t_->added.split(normalized, matching, /*normalized_pass=*/true, segments);
  } else if (!normalized.empty()) {
    segments.push_back({normalized, nullptr});
  }
  const std::function<void(std::string_view)> encode_piece = [&](std::string_view piece) {
    t_->model.encode_word(piece, out);
  };
  for (const auto& s : segments) {
    if (s.token != nullptr) {
      out.push_back(s.token->id);
    } else {
      t_->pretokenizer.split(s.text, encode_piece);
    }
  }
}

std::string bpe_tokenizer::decode(const std::vector<token_id>& ids) const {
  return decode(ids.data(), ids.size());
}

std::string bpe_tokenizer::decode(const token_id* ids, std::size_t count) const {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    if (is_image_row(ids[i])) {
      if (i == 0 || !is_image_row(ids[i - 1])) out += image_rows_text;
      continue;
    }
    if (!is_defined(ids[i])) {
      throw std::out_of_range("bpe_tokenizer::decode: id " + std::to_string(ids[i]) + " at position " +
                              std::to_string(i) + " is not defined by " + t_->path);
    }
    out += t_->bytes[static_cast<std::size_t>(ids[i])];
  }
  return out;
}

int bpe_tokenizer::vocab_size() const { return static_cast<int>(t_->bytes.size()); }

bool bpe_tokenizer::is_defined(token_id id) const {
  return id >= 0 && id < vocab_size() && t_->kind[static_cast<std::size_t>(id)] != token_kind::undefined;
}

bool bpe_tokenizer::is_special(token_id id) const {
  return id >= 0 && id < vocab_size() && t_->kind[static_cast<std::size_t>(id)] == token_kind::special;
}

std::optional<token_id> bpe_tokenizer::special_id(std::string_view text) const {
  const auto it = t_->added_by_content.find(std::string(text));
  if (it == t_->added_by_content.end()) return std::nullopt;
  return it->second;
}

const std::string& bpe_tokenizer::token_bytes(token_id id) const {
  if (!is_defined(id)) throw std::out_of_range("bpe_tokenizer: id " + std::to_string(id) + " is not defined");
  return t_->bytes[static_cast<std::size_t>(id)];
}

const std::vector<added_token>& bpe_tokenizer::added_tokens() const { return t_->added.tokens(); }

const std::string& bpe_tokenizer::path() const { return t_->path; }

}  // namespace anchorage
