#pragma once
// The "model" node of a byte-level BPE tokenizer.json: the vocabulary (token text written in
// GPT-2's byte-level characters, see byte_unicode.hpp) and the merge list, whose order is the
// merge rank. Works on bytes: every token is held as the bytes it stands for.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/token.hpp"

namespace anchorage {

class bpe_model {
 public:
  // Refuses (std::invalid_argument naming the JSON path) a type other than "BPE", dropout,
  // byte_fallback, a subword prefix or suffix, a vocabulary entry that is not byte-level text,
  // a vocabulary without one of the 256 single-byte tokens, a malformed merge, and a merge whose
  // parts or result are not in the vocabulary.
  static bpe_model from_json(const nlohmann::json& node);

  bpe_model() = default;
  bpe_model(bpe_model&&) = default;  // the views in ids_ stay valid: bytes_'s buffer moves whole
  bpe_model& operator=(bpe_model&&) = default;
  bpe_model(const bpe_model&) = delete;
  bpe_model& operator=(const bpe_model&) = delete;

  // Appends the ids of one pre-tokenized word (bytes, not empty): with ignore_merges a word that
  // is itself in the vocabulary is one id; otherwise the word starts as one token per byte and
  // the adjacent pair of lowest merge rank is merged, leftmost first, until no pair has a rank.
  // Thread-safe: results for short words are kept in a per-thread cache (cleared when full, or
  // when the thread moves on to another bpe_model).
  void encode_word(std::string_view word, std::vector<token_id>& out) const;

  // One past the largest vocabulary id; ids below it with no entry have empty bytes().
  token_id size() const { return static_cast<token_id>(bytes_.size()); }
  bool has(token_id id) const { return id >= 0 && id < size() && defined_[static_cast<std::size_t>(id)]; }
  const std::string& bytes(token_id id) const { return bytes_[static_cast<std::size_t>(id)]; }
  std::size_t merge_count() const { return merge_count_; }

 private:
  struct merge {
    std::int32_t rank;
    token_id result;
  };
  static std::uint64_t pair_key(token_id left, token_id right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
           static_cast<std::uint32_t>(right);
  }

  std::vector<std::string> bytes_;                      // by id
  std::vector<bool> defined_;                           // by id
  std::unordered_map<std::string_view, token_id> ids_;  // views into bytes_, which never moves after load
  token_id byte_ids_[256] = {};
  // Merges by pair_key: open addressing with linear probing over a power-of-two table (a std::
  // unordered_map lookup was a third of encode time).
  struct merge_slot {
    std::uint64_t key = empty_key;
    merge value{};
  };
  static constexpr std::uint64_t empty_key = ~std::uint64_t{0};  // no pair of ids >= 0 makes it
  const merge* find_merge(std::uint64_t key) const {
    for (std::size_t i = (key * 0x9E3779B97F4A7C15ull) >> merge_shift_;;
         i = (i + 1) & (merge_table_.size() - 1)) {
      const merge_slot& slot = merge_table_[i];
      if (slot.key == key) return &slot.value;
      if (slot.key == empty_key) return nullptr;
    }
  }
  void merge_word(std::string_view word, std::vector<token_id>& out) const;
  void build_merge_table(const std::unordered_map<std::uint64_t, merge>& merges);
  std::vector<merge_slot> merge_table_;
  unsigned merge_shift_ = 63;
  std::size_t merge_count_ = 0;
  bool ignore_merges_ = false;
  std::uint64_t instance_ = 0;  // tells the per-thread word caches of different models apart
};

}  // namespace anchorage
