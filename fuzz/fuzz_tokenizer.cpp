// The tokenizer (runtime/text/tokenizer/tokenizer.hpp) on any bytes, with the byte tokenizer and a BPE one
// (tests/support/bpe_fixtures/tiny_qwen35.json: Qwen3.5's pre-tokenizer, NFC, its added tokens).
// Round trips where the contract promises them: the byte tokenizer's decode(encode(s)) == s for
// every s; encode_bytes for every s; the BPE's encode, with or without special tokens, whenever
// s is valid UTF-8 and its own NFC. Ids decode, or throw std::out_of_range when undefined.
#include <utf8proc.h>

#include <cstdlib>
#include <exception>
#include <stdexcept>

#include "fuzz/fuzz_support.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace anchorage;

namespace {

const tokenizer& bpe() {
  static const tokenizer t =
      tokenizer::from_json_file(ANCHORAGE_SOURCE_DIR "/tests/support/bpe_fixtures/tiny_qwen35.json");
  return t;
}

// s is valid UTF-8 and NFC leaves it as it is.
bool is_own_nfc(std::string_view s) {
  if (s.find('\0') != std::string_view::npos) return false;  // utf8proc_NFC reads a C string
  const std::string z(s);
  utf8proc_uint8_t* n = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(z.c_str()));
  if (n == nullptr) return false;
  const bool same = z == reinterpret_cast<const char*>(n);
  std::free(n);
  return same;
}

void round_trips(const tokenizer& t, std::string_view s, bool encode_holds) {
  fuzz::check(t.decode(t.encode_bytes(s)) == s, "decode(encode_bytes(s)) == s");
  for (bool special : {false, true}) {
    const auto ids = t.encode(s, special);
    for (token_id id : ids) fuzz::check(t.is_defined(id), "encode gives defined ids");
    if (!special)
      for (token_id id : ids)
        fuzz::check(!t.is_special(id), "without parse_special no added token is matched");
    if (encode_holds) fuzz::check(t.decode(ids) == s, "decode(encode(s)) == s");
  }
}

void decode_ids(const tokenizer& t, const std::uint8_t* data, std::size_t size) {
  std::vector<token_id> ids;
  for (std::size_t i = 0; i + 2 <= size && ids.size() < 64; i += 2)
    ids.push_back(static_cast<token_id>((data[i] | (data[i + 1] << 8)) % (t.vocab_size() + 8)) - 4);
  bool defined = true;
  for (token_id id : ids) defined = defined && t.is_defined(id);
  try {
    const std::string text = t.decode(ids);
    fuzz::check(defined, "decode refuses an undefined id");
    std::string joined;
    for (token_id id : ids) joined += t.token_text(id);
    fuzz::check(joined == text, "decode is the concatenation of token_text");
  } catch (const std::out_of_range&) {
    fuzz::check(!defined, "decode takes every defined id");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view s = fuzz::as_text(data, size);
  try {
    const tokenizer byte;
    round_trips(byte, s, true);
    round_trips(bpe(), s, is_own_nfc(s));
    decode_ids(byte, data, size);
    decode_ids(bpe(), data, size);
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}
