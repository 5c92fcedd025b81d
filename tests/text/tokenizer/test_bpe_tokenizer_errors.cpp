// Every tokenizer.json the byte-level BPE tokenizer cannot use is refused with a message that
// names the file and the problem.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer/bpe_tokenizer.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using nlohmann::json;

namespace {

const std::string fixture = std::string(ANCHORAGE_SOURCE_DIR) + "/tests/support/bpe_fixtures/tiny_qwen3.json";

json tiny() {
  std::ifstream in(fixture);
  return json::parse(in);
}

// The message from_file throws for `path`, or "" when it loads.
std::string load_error(const std::string& path) {
  try {
    bpe_tokenizer::from_file(path);
  } catch (const tokenizer_file_error& e) {
    return e.what();
  }
  return "";
}

std::string load_error(const anchorage::testing::temp_dir& dir, const std::function<void(json&)>& edit) {
  json j = tiny();
  edit(j);
  const std::string path = dir.file("tokenizer.json");
  std::ofstream(path) << j.dump();
  return load_error(path);
}

}  // namespace

TEST_CASE("bpe errors: a missing file and a file that is not JSON", "[bpe]") {
  anchorage::testing::temp_dir dir("bpe-errors");
  const std::string missing = dir.file("absent.json");
  CHECK_THAT(load_error(missing), Catch::Contains(missing) && Catch::Contains("cannot open"));
  const std::string bad = dir.file("bad.json");
  std::ofstream(bad) << "{\"model\": [1, 2";
  CHECK_THAT(load_error(bad), Catch::Contains(bad) && Catch::Contains("not valid JSON"));
  const std::string array = dir.file("array.json");
  std::ofstream(array) << "[1, 2]";
  CHECK_THAT(load_error(array), Catch::Contains(array) && Catch::Contains("object"));
}

TEST_CASE("bpe errors: unsupported components name the file and the JSON path", "[bpe]") {
  anchorage::testing::temp_dir dir("bpe-errors");
  const std::string file = dir.file("tokenizer.json");
  struct example {
    const char* what;
    std::function<void(json&)> edit;
    const char* expected;  // a part of the message besides the file name
  };
  const std::vector<example> examples = {
      {"WordPiece model", [](json& j) { j["model"]["type"] = "WordPiece"; },
       "model type \"WordPiece\" is not supported"},
      {"no model", [](json& j) { j.erase("model"); }, "model: expected an object"},
      {"NFKC normalizer",
       [](json& j) {
         j["normalizer"] = {{"type", "NFKC"}};
       },
       "normalizer type \"NFKC\""},
      {"NFKC inside a Sequence",
       [](json& j) {
         j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "NFKC"}}}}};
       },
       "normalizer.normalizers[1]"},
      {"Whitespace pre-tokenizer",
       [](json& j) {
         j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Whitespace"}};
       },
       "pre_tokenizer.pretokenizers[0]: pre-tokenizer type \"Whitespace\""},
      {"Split behavior Removed",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; },
       "pretokenizers[0].behavior: only \"Isolated\""},
      {"Split invert", [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["invert"] = true; }, "invert"},
      {"no ByteLevel", [](json& j) { j["pre_tokenizer"]["pretokenizers"].erase(1); }, "needs a ByteLevel"},
      {"a regex PCRE2 rejects",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(\\p{L}+"; },
       "PCRE2 rejects the pattern at offset 7: missing closing parenthesis"},
      {"an unknown property",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\p{Nope}"; },
       "unknown property"},
      {"byte_fallback", [](json& j) { j["model"]["byte_fallback"] = true; }, "model.byte_fallback"},
      {"a merge out of the vocabulary", [](json& j) { j["model"]["merges"].push_back("x q"); },
       "model.merges[11]: merge \"x q\" uses or makes a token not in the vocabulary"},
      {"a malformed merge", [](json& j) { j["model"]["merges"][0] = "abc"; }, "model.merges[0]"},
      {"a missing byte", [](json& j) { j["model"]["vocab"].erase("Ġ"); }, "no token for byte 32"},
      {"single_word", [](json& j) { j["added_tokens"][0]["single_word"] = true; },
       "added_tokens[0].single_word"},
      {"a duplicated added token", [](json& j) { j["added_tokens"][1]["content"] = "<|endoftext|>"; },
       "added twice"},
      {"an added token on a vocabulary token's id", [](json& j) { j["added_tokens"][1]["id"] = 115; },
       "added_tokens[1].id: id 115 is the vocabulary's token for other text"},
      {"two added tokens on one id", [](json& j) { j["added_tokens"][2]["id"] = j["added_tokens"][0]["id"]; },
       "added_tokens[2].id: id"},
      {"two added tokens on one id, named",
       [](json& j) { j["added_tokens"][2]["id"] = j["added_tokens"][0]["id"]; },
       "is given twice (added_tokens[0] has it)"},
      {"a WordPiece decoder",
       [](json& j) {
         j["decoder"] = {{"type", "WordPiece"}};
       },
       "decoder"},
  };
  for (const auto& e : examples) {
    INFO(e.what);
    const std::string message = load_error(dir, e.edit);
    CHECK_THAT(message, Catch::StartsWith("tokenizer file '" + file + "': ") && Catch::Contains(e.expected));
  }
  CHECK(load_error(dir, [](json&) {}).empty());  // the unedited fixture loads
}

TEST_CASE("bpe errors: an added token may name the vocabulary's own token at its id", "[bpe]") {
  anchorage::testing::temp_dir dir("bpe-errors");
  CHECK(load_error(dir, [](json& j) {
          j["added_tokens"].push_back({{"id", 115},
                                       {"content", "s"},
                                       {"single_word", false},
                                       {"lstrip", false},
                                       {"rstrip", false},
                                       {"normalized", false},
                                       {"special", false}});
        }).empty());
}
