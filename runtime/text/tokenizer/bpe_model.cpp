#include "runtime/text/tokenizer/bpe_model.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer/byte_unicode.hpp"

namespace anchorage {

namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& path, const std::string& problem) {
  throw std::invalid_argument(path + ": " + problem);
}

const json& member(const json& node, const char* key, const std::string& path) {
  const auto it = node.find(key);
  if (it == node.end()) refuse(path, std::string("missing \"") + key + "\"");
  return *it;
}

bool is_unset(const json& node, const char* key) {
  const auto it = node.find(key);
  return it == node.end() || it->is_null() || (it->is_boolean() && !it->get<bool>()) ||
         (it->is_string() && it->get<std::string>().empty());
}

std::string bytes_of(const std::string& text, const std::string& path) {
  auto bytes = byte_level_to_bytes(text);
  if (!bytes) refuse(path, "\"" + text + "\" is not byte-level text");
  return std::move(*bytes);
}

// The two parts of merge `i`: "a b" (exactly one space) or ["a", "b"].
std::pair<std::string, std::string> merge_parts(const json& item, const std::string& path) {
  if (item.is_string()) {
    const std::string& s = item.get_ref<const std::string&>();
    const auto space = s.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == s.size() ||
        s.find(' ', space + 1) != std::string::npos) {
      refuse(path, "merge \"" + s + "\" is not two tokens separated by one space");
    }
    return {s.substr(0, space), s.substr(space + 1)};
  }
  if (item.is_array() && item.size() == 2 && item[0].is_string() && item[1].is_string()) {
    return {item[0].get<std::string>(), item[1].get<std::string>()};
  }
  refuse(path, "a merge must be \"a b\" or [\"a\", \"b\"]");
}

}  // namespace

bpe_model bpe_model::from_json(const json& node) {
  const std::string root = "model";
  if (!node.is_object()) refuse(root, "expected an object");
  const json& type = member(node, "type", root);
  if (!type.is_string() || type.get<std::string>() != "BPE") {
    refuse(root + ".type", "model type " + type.dump() + " is not supported (only \"BPE\")");
  }
  for (const char* key : {"dropout", "byte_fallback", "continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!is_unset(node, key)) refuse(root + "." + key, "is not supported (must be null, false or empty)");
  }
  static std::atomic<std::uint64_t> instances{0};
  bpe_model m;
  m.instance_ = ++instances;
  m.ignore_merges_ = node.value("ignore_merges", false);

  const json& vocab = member(node, "vocab", root);
  if (!vocab.is_object()) refuse(root + ".vocab", "expected an object of token -> id");
  token_id largest = -1;
  for (const auto& [text, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() > 0x7fffffff) {
      refuse(root + ".vocab[\"" + text + "\"]", "id must be a non-negative integer");
    }
    largest = std::max(largest, id.get<token_id>());
  }
  m.bytes_.resize(static_cast<std::size_t>(largest + 1));
  m.defined_.assign(m.bytes_.size(), false);
  for (const auto& [text, id] : vocab.items()) {
    const auto index = static_cast<std::size_t>(id.get<token_id>());
    if (m.defined_[index]) refuse(root + ".vocab", "id " + std::to_string(index) + " is given twice");
    m.bytes_[index] = bytes_of(text, root + ".vocab");
    m.defined_[index] = true;
  }
  for (std::size_t id = 0; id < m.bytes_.size(); ++id) {
    if (!m.defined_[id]) continue;
    if (!m.ids_.emplace(m.bytes_[id], static_cast<token_id>(id)).second) {
      refuse(root + ".vocab", "two tokens stand for the same bytes (id " + std::to_string(id) + ")");
    }
  }
  for (unsigned b = 0; b < 256; ++b) {
    const auto it = m.ids_.find(std::string_view(std::string(1, static_cast<char>(b))));
    if (it == m.ids_.end()) {
      std::string symbol = bytes_to_byte_level(std::string(1, static_cast<char>(b)));
      refuse(root + ".vocab", "no token for byte " + std::to_string(b) + " (\"" + symbol + "\")");
    }
    m.byte_ids_[b] = it->second;
  }

  const json& merges = member(node, "merges", root);
  if (!merges.is_array()) refuse(root + ".merges", "expected an array");
  std::unordered_map<std::uint64_t, merge> by_pair;
  by_pair.reserve(merges.size());
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const std::string path = root + ".merges[" + std::to_string(i) + "]";
    const auto [left_text, right_text] = merge_parts(merges[i], path);
    const std::string left = bytes_of(left_text, path), right = bytes_of(right_text, path);
    const auto l = m.ids_.find(left), r = m.ids_.find(right), result = m.ids_.find(left + right);
    if (l == m.ids_.end() || r == m.ids_.end() || result == m.ids_.end()) {
      refuse(path,
             "merge \"" + left_text + " " + right_text + "\" uses or makes a token not in the vocabulary");
    }
    // A repeated merge takes its last rank, as in the HF tokenizers library and transformers.js.
    by_pair.insert_or_assign(pair_key(l->second, r->second),
                             merge{static_cast<std::int32_t>(i), result->second});
  }
  m.build_merge_table(by_pair);
  return m;
}

void bpe_model::build_merge_table(const std::unordered_map<std::uint64_t, merge>& merges) {
  std::size_t size = 2;
  merge_shift_ = 63;
  while (size < merges.size() * 2) {
    size *= 2;
    --merge_shift_;
  }
  merge_table_.assign(size, merge_slot{});
  for (const auto& [key, value] : merges) {
    std::size_t i = (key * 0x9E3779B97F4A7C15ull) >> merge_shift_;
    while (merge_table_[i].key != empty_key) i = (i + 1) & (size - 1);
    merge_table_[i] = {key, value};
  }
  merge_count_ = merges.size();
}

void bpe_model::encode_word(std::string_view word, std::vector<token_id>& out) const {
  if (word.size() == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (ignore_merges_) {
    const auto it = ids_.find(word);
    if (it != ids_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  constexpr std::size_t cached_word_bytes = 64, cache_entries = 1 << 15;
  if (word.size() > cached_word_bytes) {
    merge_word(word, out);
    return;
  }
  struct word_cache {
    std::uint64_t owner = 0;
    std::unordered_map<std::string, std::vector<token_id>> ids;
    std::string key;
  };
  thread_local word_cache cache;
  if (cache.owner != instance_ || cache.ids.size() >= cache_entries) {
    cache.ids.clear();
    cache.owner = instance_;
  }
  cache.key.assign(word);
  auto it = cache.ids.find(cache.key);
  if (it == cache.ids.end()) {
    std::vector<token_id> ids;
    merge_word(word, ids);
    it = cache.ids.emplace(cache.key, std::move(ids)).first;
  }
  out.insert(out.end(), it->second.begin(), it->second.end());
}

void bpe_model::merge_word(std::string_view word, std::vector<token_id>& out) const {
  // Symbols form a linked list over the word's bytes; a candidate merge is (rank, position) in a
  // min-heap and is checked on the way out, since earlier merges may have consumed its symbols.
  struct candidate {
    std::int32_t rank;
    std::int32_t pos;
    token_id left, right, result;
    bool operator>(const candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  thread_local std::vector<token_id> symbol;
  thread_local std::vector<std::int32_t> next, prev;
  thread_local std::vector<candidate> heap;
  const auto n = static_cast<std::int32_t>(word.size());
  symbol.resize(word.size());
  next.resize(word.size());
  prev.resize(word.size());
  heap.clear();
  const auto push = [&](std::int32_t pos) {
    const std::int32_t right = next[static_cast<std::size_t>(pos)];
    if (right < 0) return;
    const token_id a = symbol[static_cast<std::size_t>(pos)], b = symbol[static_cast<std::size_t>(right)];
    const merge* found = find_merge(pair_key(a, b));
    if (found == nullptr) return;
    heap.push_back({found->rank, pos, a, b, found->result});
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (std::int32_t i = 0; i < n; ++i) {
    symbol[static_cast<std::size_t>(i)] =
        byte_ids_[static_cast<unsigned char>(word[static_cast<std::size_t>(i)])];
    next[static_cast<std::size_t>(i)] = i + 1 < n ? i + 1 : -1;
    prev[static_cast<std::size_t>(i)] = i - 1;
  }
  for (std::int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const candidate c = heap.back();
    heap.pop_back();
    const auto pos = static_cast<std::size_t>(c.pos);
    const std::int32_t right = next[pos];
    if (symbol[pos] != c.left || right < 0 || symbol[static_cast<std::size_t>(right)] != c.right) continue;
    symbol[pos] = c.result;
    symbol[static_cast<std::size_t>(right)] = -1;  // the right symbol is gone
    const std::int32_t after = next[static_cast<std::size_t>(right)];
    next[pos] = after;
    if (after >= 0) prev[static_cast<std::size_t>(after)] = c.pos;
    if (prev[pos] >= 0) push(prev[pos]);
    push(c.pos);
  }
  for (std::int32_t i = 0; i >= 0; i = next[static_cast<std::size_t>(i)])
    out.push_back(symbol[static_cast<std::size_t>(i)]);
}

}  // namespace anchorage
