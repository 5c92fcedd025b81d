#include "runtime/model/qwen35_gguf_vocab.hpp"

#include <stdexcept>

#include "runtime/model/loaded_model.hpp"

namespace anchorage {
namespace {

using json = nlohmann::json;

enum token_type : std::int64_t { normal = 1, control = 3, user_defined = 4, unused = 5 };

// Qwen2/Qwen3's pre-tokenizer regex and Qwen3.5's (docs: reference/qwen35.md §5; llama.cpp's
// LLAMA_VOCAB_PRE_TYPE_QWEN2 and _QWEN35).
const char* const qwen2_regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const qwen35_regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The byte tokenizer's specials, in id order from 256 (runtime/text/tokenizer/tokenizer.hpp).
const char* const byte_specials[] = {"<|im_start|>",    "<|im_end|>",      "<think>",     "</think>",
                                     "<|image_pad|>",   "<|endoftext|>",   "<tool_call>", "</tool_call>",
                                     "<tool_response>", "</tool_response>"};
constexpr int byte_special_count = 10;

void utf8_append(std::string& s, std::uint32_t cp) {
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    s.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other bytes for
// U+0100 onwards in byte order.
std::string byte_token(int b) {
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  std::uint32_t cp = static_cast<std::uint32_t>(b);
  if (!printable) {
    std::uint32_t n = 0;
    for (int x = 0; x < b; ++x) {
      const bool p = (x >= '!' && x <= '~') || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff);
      n += p ? 0 : 1;
    }
    cp = 256 + n;
  }
  std::string s;
  utf8_append(s, cp);
  return s;
}

struct vocab_table {
  std::vector<std::string> tokens;
  std::vector<std::int64_t> types;
  std::vector<std::string> merges;
  bool qwen35_pre = true;
};

vocab_table byte_vocab(int vocab) {
  if (vocab < 256 + byte_special_count)
    throw std::invalid_argument("qwen35 gguf: the byte vocabulary needs at least 266 ids, the model has " +
                                std::to_string(vocab));
  vocab_table t;
  for (int i = 0; i < vocab; ++i) {
    if (i < 256) {
      t.tokens.push_back(byte_token(i));
      t.types.push_back(normal);
    } else if (i < 256 + byte_special_count) {
      t.tokens.push_back(byte_specials[i - 256]);
      t.types.push_back(control);
    } else {
      t.tokens.push_back("[PAD" + std::to_string(i) + "]");
      t.types.push_back(unused);
    }
  }
  return t;
}

vocab_table json_vocab(const json& tok, int vocab) {
  const json& model = tok.at("model");
  if (model.value("type", "BPE") != "BPE")
    throw std::invalid_argument("qwen35 gguf: the tokenizer is not BPE");
  vocab_table t;
  t.tokens.assign(static_cast<std::size_t>(vocab), "");
  t.types.assign(static_cast<std::size_t>(vocab), 0);
  auto put = [&](std::int64_t id, const std::string& text, std::int64_t type) {
    if (id < 0 || id >= vocab)
      throw std::invalid_argument("qwen35 gguf: tokenizer id " + std::to_string(id) + " ('" + text +
                                  "') is outside the model's vocabulary of " + std::to_string(vocab));
    t.tokens[static_cast<std::size_t>(id)] = text;
    t.types[static_cast<std::size_t>(id)] = type;
  };
  for (const auto& [text, id] : model.at("vocab").items()) put(id.get<std::int64_t>(), text, normal);
  if (tok.contains("added_tokens"))
    for (const auto& a : tok["added_tokens"])
      put(a.at("id").get<std::int64_t>(), a.at("content").get<std::string>(),
          a.value("special", false) ? control : user_defined);
  for (std::size_t i = 0; i < t.tokens.size(); ++i)
    if (t.types[i] == 0) {
      t.tokens[i] = "[PAD" + std::to_string(i) + "]";
      t.types[i] = unused;
    }
  for (const auto& m : model.value("merges", json::array()))
    t.merges.push_back(m.is_string() ? m.get<std::string>()
                                     : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
  t.qwen35_pre = tok.value("pre_tokenizer", json()).dump().find(R"(\\p{M})") != std::string::npos;
  return t;
}

std::int64_t find_token(const vocab_table& t, const std::string& text) {
  for (std::size_t i = 0; i < t.tokens.size(); ++i)
    if (t.tokens[i] == text && t.types[i] != normal) return static_cast<std::int64_t>(i);
  return -1;
}

}  // namespace

void add_qwen35_vocab(std::vector<std::pair<std::string, gguf_value>>& kv, const json& tokenizer_json,
                      int vocab) {
  vocab_table t = tokenizer_json.is_null() ? byte_vocab(vocab) : json_vocab(tokenizer_json, vocab);
  const std::int64_t eot = find_token(t, "<|endoftext|>"), im_end = find_token(t, "<|im_end|>");
  kv.emplace_back("tokenizer.ggml.model", gguf_value::str("gpt2"));
  kv.emplace_back("tokenizer.ggml.pre", gguf_value::str(t.qwen35_pre ? "qwen35" : "qwen2"));
  kv.emplace_back("tokenizer.ggml.tokens", gguf_value::str_array(std::move(t.tokens)));
  kv.emplace_back("tokenizer.ggml.token_type", gguf_value::int_array(gguf_type::int32, std::move(t.types)));
  kv.emplace_back("tokenizer.ggml.merges", gguf_value::str_array(std::move(t.merges)));
  if (eot >= 0)
    kv.emplace_back("tokenizer.ggml.bos_token_id", gguf_value::u32(static_cast<std::uint32_t>(eot)));
  const std::int64_t eos = im_end >= 0 ? im_end : eot;
  if (eos >= 0)
    kv.emplace_back("tokenizer.ggml.eos_token_id", gguf_value::u32(static_cast<std::uint32_t>(eos)));
  if (eot >= 0)
    kv.emplace_back("tokenizer.ggml.padding_token_id", gguf_value::u32(static_cast<std::uint32_t>(eot)));
  kv.emplace_back("tokenizer.ggml.add_bos_token", gguf_value::boolean(false));
}

json qwen35_tokenizer_from_gguf(const gguf_reader& file) {
  const gguf_value* tokens = file.find("tokenizer.ggml.tokens");
  if (tokens == nullptr) return nullptr;
  const gguf_value* model = file.find("tokenizer.ggml.model");
  if (model == nullptr || model->s != "gpt2")
    throw model_load_error(file.path() + ": tokenizer.ggml.model is '" + (model ? model->s : std::string()) +
                           "', only 'gpt2' (byte-level BPE) is supported");
  const gguf_value* types = file.find("tokenizer.ggml.token_type");
  const gguf_value* merges = file.find("tokenizer.ggml.merges");
  const gguf_value* pre = file.find("tokenizer.ggml.pre");
  const bool qwen35 = pre == nullptr || pre->s != "qwen2";

  json vocab = json::object(), added = json::array(), merge_list = json::array();
  for (std::size_t i = 0; i < tokens->strings.size(); ++i) {
    const std::int64_t type = types != nullptr && i < types->ints.size() ? types->ints[i] : normal;
    const std::string& text = tokens->strings[i];
    if (type == control || type == user_defined) {
      added.push_back({{"id", i},
                       {"content", text},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", type == control}});
    } else if (type != unused) {
      vocab[text] = i;
    }
  }
  if (merges != nullptr)
    for (const auto& m : merges->strings) {
      const std::size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) throw model_load_error(file.path() + ": malformed merge '" + m + "'");
      merge_list.push_back({m.substr(0, sp), m.substr(sp + 1)});
    }
  const json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", qwen35 ? qwen35_regex : qwen2_regex}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              byte_level}}}},
          {"post_processor", nullptr},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", ""},
            {"end_of_word_suffix", ""},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merge_list}}}};
}

json qwen35_tokenizer_config_from_gguf(const gguf_reader& file) {
  const gguf_value* tokens = file.find("tokenizer.ggml.tokens");
  if (tokens == nullptr) return nullptr;
  auto text_of = [&](const std::string& key) -> json {
    const gguf_value* id = file.find("tokenizer.ggml." + key);
    if (id == nullptr || !id->is_integer() || id->i < 0 ||
        static_cast<std::size_t>(id->i) >= tokens->strings.size())
      return nullptr;
    return tokens->strings[static_cast<std::size_t>(id->i)];
  };
  auto flag = [&](const std::string& key) {
    const gguf_value* v = file.find("tokenizer.ggml." + key);
    return v != nullptr && v->is_integer() && v->i != 0;
  };
  json config = {{"bos_token", text_of("bos_token_id")},
                 {"eos_token", text_of("eos_token_id")},
                 {"pad_token", text_of("padding_token_id")},
                 {"add_bos_token", flag("add_bos_token")},
                 {"add_eos_token", flag("add_eos_token")}};
  if (const gguf_value* t = file.find("tokenizer.chat_template")) config["chat_template"] = t->s;
  return config;
}

}  // namespace anchorage
