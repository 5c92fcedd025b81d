// A tokenizer.json read from disk (runtime/text/tokenizer/bpe_tokenizer.hpp, tokenizer.hpp): any bytes
// that parse as JSON go to tokenizer::from_json, which throws only tokenizer_file_error; a file
// it accepts encodes and decodes a few strings (encode_bytes round-trips) without failing.
#include <exception>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_support.hpp"
#include "runtime/text/tokenizer/bpe_tokenizer.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

using namespace anchorage;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(fuzz::as_text(data, size), nullptr, false);
  if (doc.is_discarded()) return 0;
  std::optional<tokenizer> t;
  try {
    t = tokenizer::from_json(doc, "fuzz.json");
  } catch (const tokenizer_file_error& e) {
    fuzz::check(std::string_view(e.what()).find("fuzz.json") != std::string_view::npos,
                "a refusal names the file");
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  try {
    for (std::string_view s :
         {"<|im_start|>user\nhello world 123<|im_end|>", "\xff\xfe caf\xc3\xa9 \xe2\x82", ""}) {
      fuzz::check(t->decode(t->encode_bytes(s)) == s, "decode(encode_bytes(s)) == s");
      for (bool special : {false, true})
        for (token_id id : t->encode(s, special)) fuzz::check(t->is_defined(id), "encode gives defined ids");
    }
    fuzz::check(t->is_defined(t->ids().im_start) && t->is_defined(t->ids().im_end),
                "the chat markers are defined");
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}
