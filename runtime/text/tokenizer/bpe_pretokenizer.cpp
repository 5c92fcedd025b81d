#include "runtime/text/tokenizer/bpe_pretokenizer.hpp"

#include <cstdlib>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "runtime/text/tokenizer/utf8_stream.hpp"

namespace anchorage {

const char* const gpt2_split_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& path, const std::string& problem) {
  throw std::invalid_argument(path + ": " + problem);
}

std::string type_of(const json& node, const std::string& path) {
  if (!node.is_object()) refuse(path, "expected an object");
  const auto it = node.find("type");
  if (it == node.end() || !it->is_string()) refuse(path, "missing \"type\"");
  return it->get<std::string>();
}

bool flag(const json& node, const char* key, bool fallback, const std::string& path) {
  const auto it = node.find(key);
  if (it == node.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) refuse(path + "." + key, "expected true or false");
  return it->get<bool>();
}

// Whether a normalizer node asks for NFC (null, NFC, or a Sequence of those).
bool read_normalizer(const json& node, const std::string& path) {
  if (node.is_null()) return false;
  const std::string type = type_of(node, path);
  if (type == "NFC") return true;
  if (type != "Sequence")
    refuse(path, "normalizer type \"" + type + "\" is not supported (only NFC and Sequence)");
  const auto it = node.find("normalizers");
  if (it == node.end() || !it->is_array()) refuse(path, "Sequence without a \"normalizers\" array");
  bool nfc = false;
  for (std::size_t i = 0; i < it->size(); ++i) {
    nfc = read_normalizer((*it)[i], path + ".normalizers[" + std::to_string(i) + "]") || nfc;
  }
  return nfc;
}

split_regex read_split(const json& node, const std::string& path) {
  const auto pattern = node.find("pattern");
  if (pattern == node.end() || !pattern->is_object()) refuse(path, "Split without a \"pattern\" object");
  const auto behavior = node.find("behavior");
  if (behavior == node.end() || !behavior->is_string() || behavior->get<std::string>() != "Isolated") {
    refuse(path + ".behavior", "only \"Isolated\" is supported");
  }
  if (flag(node, "invert", false, path)) refuse(path + ".invert", "only false is supported");
  const auto regex = pattern->find("Regex");
  const auto literal = pattern->find("String");
  try {
    if (regex != pattern->end() && regex->is_string()) {
      return split_regex(regex->get<std::string>(), split_regex::syntax::regex);
    }
    if (literal != pattern->end() && literal->is_string()) {
      return split_regex(literal->get<std::string>(), split_regex::syntax::literal);
    }
  } catch (const std::invalid_argument& e) {
    refuse(path + ".pattern", e.what());
  }
  refuse(path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
}

// True when every code point of `valid` is NFC_Quick_Check=Yes with combining class 0 and never
// composes with a neighbour: below U+0300 (before the first combining mark), kana other than the
// combining voicing marks U+3099/U+309A, CJK unified ideographs and precomposed Hangul. Such text
// is its own NFC, so utf8proc is skipped.
bool nfc_stable_fast(std::string_view valid) {
  for (std::size_t pos = 0; pos < valid.size();) {
    if (static_cast<unsigned char>(valid[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const utf8_sequence seq = next_utf8_sequence(valid, pos);
    const char32_t c = seq.code_point;
    const bool stable = c < 0x300 || (c >= 0x3041 && c <= 0x3096) || (c >= 0x30A1 && c <= 0x30FA) ||
                        (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3);
    if (!stable) return false;
    pos += seq.length;
  }
  return true;
}

void append_nfc(std::string& out, std::string_view valid) {
  if (nfc_stable_fast(valid)) {
    out.append(valid);
    return;
  }
  utf8proc_uint8_t* result = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(valid.data()),
                                          static_cast<utf8proc_ssize_t>(valid.size()), &result,
                                          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(result, &std::free);
  if (n < 0) throw std::runtime_error(std::string("utf8proc NFC failed: ") + utf8proc_errmsg(n));
  out.append(reinterpret_cast<const char*>(result), static_cast<std::size_t>(n));
}

// Calls valid(run) and invalid(run) over the maximal valid and invalid runs of `text`, in order.
template <class Valid, class Invalid>
void for_each_run(std::string_view text, Valid&& valid, Invalid&& invalid) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t n = valid_utf8_prefix(text.substr(pos));
    if (n > 0) valid(text.substr(pos, n));
    pos += n;
    const std::size_t bad_start = pos;
    while (pos < text.size() && next_utf8_sequence(text, pos).status != utf8_status::valid) {
      pos += next_utf8_sequence(text, pos).length;
    }
    if (pos > bad_start) invalid(text.substr(bad_start, pos - bad_start));
  }
}

}  // namespace

text_normalizer text_normalizer::from_json(const json& node) {
  text_normalizer n;
  n.nfc_ = read_normalizer(node, "normalizer");
  return n;
}

std::string text_normalizer::apply(std::string_view text) const {
  if (!nfc_) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for_each_run(
      text, [&](std::string_view run) { append_nfc(out, run); },
      [&](std::string_view run) { out.append(run); });
  return out;
}

bpe_pretokenizer bpe_pretokenizer::from_json(const json& node) {
  const std::string root = "pre_tokenizer";
  if (node.is_null()) refuse(root, "byte-level BPE needs a ByteLevel pre-tokenizer, found null");
  std::vector<std::pair<const json*, std::string>> items;
  if (type_of(node, root) == "Sequence") {
    const auto it = node.find("pretokenizers");
    if (it == node.end() || !it->is_array()) refuse(root, "Sequence without a \"pretokenizers\" array");
    for (std::size_t i = 0; i < it->size(); ++i)
      items.emplace_back(&(*it)[i], root + ".pretokenizers[" + std::to_string(i) + "]");
  } else {
    items.emplace_back(&node, root);
  }
  bpe_pretokenizer result;
  bool byte_level = false;
  for (const auto& [item, path] : items) {
    const std::string type = type_of(*item, path);
    if (byte_level)
      refuse(path, "\"" + type + "\" after ByteLevel is not supported (ByteLevel must come last)");
    if (type == "Split") {
      result.steps_.push_back(read_split(*item, path));
    } else if (type == "ByteLevel") {
      byte_level = true;
      result.add_prefix_space_ = flag(*item, "add_prefix_space", true, path);
      flag(*item, "trim_offsets", true, path);  // validated; offsets are not reported
      if (flag(*item, "use_regex", true, path)) {
        result.byte_level_regex_.emplace_back(gpt2_split_pattern, split_regex::syntax::regex);
      }
    } else {
      refuse(path,
             "pre-tokenizer type \"" + type + "\" is not supported (only Split, ByteLevel and Sequence)");
    }
  }
  if (!byte_level) refuse(root, "byte-level BPE needs a ByteLevel pre-tokenizer");
  return result;
}

void bpe_pretokenizer::split(std::string_view text, const std::function<void(std::string_view)>& emit) const {
  for_each_run(
      text, [&](std::string_view run) { split_valid(run, emit); },
      [&](std::string_view run) { byte_level(run, /*valid_utf8=*/false, emit); });
}

void bpe_pretokenizer::split_valid(std::string_view text,
                                   const std::function<void(std::string_view)>& emit) const {
  std::vector<std::string_view> current{text}, next;
  for (const split_regex& step : steps_) {
    next.clear();
    for (std::string_view p : current) step.split_isolated(p, next);
    current.swap(next);
  }
  for (std::string_view p : current) byte_level(p, /*valid_utf8=*/true, emit);
}

void bpe_pretokenizer::byte_level(std::string_view piece, bool valid_utf8,
                                  const std::function<void(std::string_view)>& emit) const {
  std::string prefixed;
  if (add_prefix_space_ && piece.front() != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (byte_level_regex_.empty() || !valid_utf8) {
    emit(piece);
    return;
  }
  std::vector<std::string_view> parts;
  byte_level_regex_.front().split_isolated(piece, parts);
  for (std::string_view p : parts) emit(p);
}

}  // namespace anchorage
