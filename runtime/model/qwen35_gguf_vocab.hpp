#pragma once
// The tokenizer of a qwen35 GGUF: tokenizer.ggml.* metadata from a tokenizer.json (or, without one,
// from Anchorage's byte vocabulary), and a tokenizer.json-shaped document back from that metadata.
//
// Written (as llama.cpp's _set_vocab_gpt2): tokenizer.ggml.model "gpt2"; tokenizer.ggml.pre "qwen35"
// when the tokenizer's Split regex is Qwen3.5's (it has \p{M}), "qwen2" otherwise (Qwen2/Qwen3);
// tokens and token_type for every id below the model's vocab (1 NORMAL, 3 CONTROL for special added
// tokens, 4 USER_DEFINED for other added tokens, 5 UNUSED "[PAD{i}]" for ids the tokenizer lacks);
// merges as "a b"; bos and padding = <|endoftext|>, eos = <|im_end|> (or <|endoftext|> without it);
// add_bos_token false.
// Without a tokenizer.json the vocabulary is the byte tokenizer's (runtime/text/tokenizer/tokenizer.hpp):
// ids 0..255 are the bytes in GPT-2's byte-to-unicode spelling (NORMAL), 256..265 the specials
// (CONTROL), the rest "[PAD{i}]" (UNUSED); no merges, so every byte stays its own token.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/gguf_file.hpp"

namespace anchorage {

// Appends the tokenizer.ggml.* keys for a model of `vocab` ids. `tokenizer_json` may be null.
// Throws std::invalid_argument when the tokenizer has an id at or past `vocab` or is not BPE.
void add_qwen35_vocab(std::vector<std::pair<std::string, gguf_value>>& metadata,
                      const nlohmann::json& tokenizer_json, int vocab);

// The tokenizer.json document a qwen35 GGUF describes, or null when it has no tokenizer.ggml.tokens.
// model BPE with the NORMAL tokens as vocab and the merges as pairs; added_tokens from CONTROL
// (special) and USER_DEFINED (not special) tokens; normalizer NFC; pre_tokenizer Split (llama.cpp's
// regex for the pre name, behavior Isolated) then ByteLevel (use_regex false); decoder ByteLevel.
// Approximated: UNUSED ids are left out; per-token lstrip/rstrip/normalized flags and a
// post_processor are not in GGUF, so they are false/absent.
// Throws model_load_error for a tokenizer.ggml.model other than "gpt2".
nlohmann::json qwen35_tokenizer_from_gguf(const gguf_reader& file);

// A tokenizer_config.json-shaped document from the same metadata, or null without tokens:
// bos_token, eos_token, pad_token (the texts of tokenizer.ggml.{bos,eos,padding}_token_id, null when
// absent), add_bos_token and add_eos_token (false when absent), and chat_template when present.
nlohmann::json qwen35_tokenizer_config_from_gguf(const gguf_reader& file);

}  // namespace anchorage
