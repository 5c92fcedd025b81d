// Manifest files: a fixed header and the manifest's fields as CBOR (docs/SPILL_FORMAT.md).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "runtime/spill/spill_codec.hpp"
#include "runtime/spill/spill_codec_detail.hpp"

namespace anchorage {
using namespace spill_codec_detail;
using json = nlohmann::json;

namespace {

std::size_t grid_of(const state_layout& l) { return static_cast<std::size_t>(l.grid); }

// ---- Fields to CBOR values and back ----------------------------------------------------------

json spans_to(const std::vector<spill_span>& spans) {
  json a = json::array();
  for (const auto& s : spans) a.push_back(json::array({s.first, s.second}));
  return a;
}
json sums_to(const std::vector<spill_sum>& sums) {
  json a = json::array();
  for (const auto& s : sums) a.push_back(json::array({s.s0, s.s1}));
  return a;
}
json tokens_to(const std::vector<token_id>& tokens) {
  std::vector<std::uint8_t> b(tokens.size() * sf::token_bytes);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const auto v = static_cast<std::uint32_t>(tokens[i]);
    for (std::size_t k = 0; k < 4; ++k) b[4 * i + k] = static_cast<std::uint8_t>(v >> (8 * k));
  }
  return json::binary(std::move(b));
}

json to_payload(const spill_manifest& m) {
  json j;
  j["id"] = m.id;
  j["session_key"] = m.session_key;
  j["tokens"] = tokens_to(m.tokens);
  j["taint"] = m.taint;
  j["reasoning"] = spans_to(m.reasoning);
  j["hidden"] = spans_to(m.hidden);
  j["answers"] = spans_to(m.answers);
  j["think_close"] = m.think_close;
  if (m.end) {
    j["end"] = {{"at", m.end->at},
                {"prompt_len", m.end->prompt_len},
                {"pending", m.end->pending},
                {"reasoning", spans_to(m.end->reasoning)},
                {"hidden", spans_to(m.end->hidden)},
                {"answers", spans_to(m.end->answers)}};
  } else {
    j["end"] = nullptr;
  }
  json blocks = json::array();
  for (const auto& b : m.blocks)
    blocks.push_back({{"name", b.name}, {"a", b.a}, {"b", b.b}, {"sums", sums_to(b.sums)}});
  j["blocks"] = std::move(blocks);
  json anchors = json::array();
  for (const auto& a : m.anchors)
    anchors.push_back({{"name", a.name}, {"at", a.at}, {"end", a.end}, {"sums", sums_to(a.sums)}});
  j["anchors"] = std::move(anchors);
  j["resident"] = m.resident;
  j["slot"] = m.slot;
  j["sequence"] = m.sequence;
  return j;
}

// Readers: each throws std::runtime_error naming the field when it is missing or of another
// type (caught once, in decode_spill_manifest).
[[noreturn]] void bad(const std::string& field, const char* want) {
  throw std::runtime_error("field '" + field + "' is not " + want);
}
const json& field(const json& j, const std::string& name) {
  auto it = j.find(name);
  if (it == j.end()) throw std::runtime_error("field '" + name + "' is missing");
  return *it;
}
std::uint64_t get_uint(const json& j, const std::string& name) {
  const json& v = field(j, name);
  if (!v.is_number_unsigned()) bad(name, "an unsigned integer");
  return v.get<std::uint64_t>();
}
std::size_t get_size(const json& j, const std::string& name) {
  return static_cast<std::size_t>(get_uint(j, name));
}
std::int64_t get_int(const json& j, const std::string& name) {
  const json& v = field(j, name);
  if (!v.is_number_integer()) bad(name, "an integer");
  return v.get<std::int64_t>();
}
token_id get_token(const json& j, const std::string& name) {
  const std::int64_t v = get_int(j, name);
  if (v < INT32_MIN || v > INT32_MAX) bad(name, "an int32");
  return static_cast<token_id>(v);
}
bool get_bool(const json& j, const std::string& name) {
  const json& v = field(j, name);
  if (!v.is_boolean()) bad(name, "a boolean");
  return v.get<bool>();
}
std::uint64_t as_uint(const json& v, const std::string& name) {
  if (!v.is_number_unsigned()) bad(name, "an unsigned integer");
  return v.get<std::uint64_t>();
}
std::vector<spill_span> get_spans(const json& j, const std::string& name) {
  const json& a = field(j, name);
  if (!a.is_array()) bad(name, "an array");
  std::vector<spill_span> out;
  for (const json& s : a) {
    if (!s.is_array() || s.size() != 2) bad(name, "an array of [first, second] pairs");
    out.emplace_back(static_cast<std::size_t>(as_uint(s[0], name)),
                     static_cast<std::size_t>(as_uint(s[1], name)));
  }
  return out;
}
std::vector<spill_sum> get_sums(const json& j, const std::string& name) {
  const json& a = field(j, name);
  if (!a.is_array()) bad(name, "an array");
  std::vector<spill_sum> out;
  for (const json& s : a) {
    if (!s.is_array() || s.size() != 2) bad(name, "an array of [s0, s1] pairs");
    out.push_back({as_uint(s[0], name), as_uint(s[1], name)});
  }
  return out;
}
std::vector<token_id> get_tokens(const json& j) {
  const json& v = field(j, "tokens");
  if (!v.is_binary()) bad("tokens", "a byte string");
  const auto& b = v.get_binary();
  if (b.size() % sf::token_bytes != 0) bad("tokens", "a whole number of int32 ids");
  std::vector<token_id> out(b.size() / sf::token_bytes);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<token_id>(get_u32(b.data() + 4 * i));
  return out;
}

spill_manifest from_payload(const json& j) {
  if (!j.is_object()) throw std::runtime_error("the payload is not a map");
  spill_manifest m;
  m.id = get_uint(j, "id");
  const json& key = field(j, "session_key");
  if (!key.is_string()) bad("session_key", "a string");
  m.session_key = key.get<std::string>();
  m.tokens = get_tokens(j);
  m.taint = get_size(j, "taint");
  m.reasoning = get_spans(j, "reasoning");
  m.hidden = get_spans(j, "hidden");
  m.answers = get_spans(j, "answers");
  m.think_close = get_token(j, "think_close");
  const json& end = field(j, "end");
  if (!end.is_null()) {
    if (!end.is_object()) bad("end", "a map or null");
    spill_end e;
    e.at = get_size(end, "at");
    e.prompt_len = get_size(end, "prompt_len");
    e.pending = get_token(end, "pending");
    e.reasoning = get_spans(end, "reasoning");
    e.hidden = get_spans(end, "hidden");
    e.answers = get_spans(end, "answers");
    m.end = std::move(e);
  }
  const json& blocks = field(j, "blocks");
  if (!blocks.is_array()) bad("blocks", "an array");
  for (const json& b : blocks) {
    if (!b.is_object()) bad("blocks", "an array of maps");
    m.blocks.push_back({get_uint(b, "name"), get_size(b, "a"), get_size(b, "b"), get_sums(b, "sums")});
  }
  const json& anchors = field(j, "anchors");
  if (!anchors.is_array()) bad("anchors", "an array");
  for (const json& a : anchors) {
    if (!a.is_object()) bad("anchors", "an array of maps");
    m.anchors.push_back({get_uint(a, "name"), get_size(a, "at"), get_bool(a, "end"), get_sums(a, "sums")});
  }
  m.resident = get_bool(j, "resident");
  const std::int64_t slot = get_int(j, "slot");
  if (slot < 0 || slot > INT32_MAX) bad("slot", "a slot number");
  m.slot = static_cast<int>(slot);
  m.sequence = get_uint(j, "sequence");
  return m;
}

std::string check_spans(const std::vector<spill_span>& spans, std::size_t n, const char* what) {
  for (const auto& s : spans)
    if (s.first > s.second || s.second > n)
      return std::string(what) + " span [" + num(s.first) + ", " + num(s.second) + ") is not inside [0, " +
             num(n) + ")";
  return {};
}

}  // namespace

std::string check_spill_manifest(const state_layout& layout, const spill_manifest& m) {
  const std::size_t g = grid_of(layout);
  const std::size_t n = m.tokens.size();
  if (g == 0) return "the layout has no grid";
  if (n == 0) return "a manifest without tokens";
  if (m.id != spill_conversation_id(m.session_key, m.tokens, g))
    return "id " + hex(m.id) + " is not the conversation id of its session key and tokens";
  if (m.taint > n) return "taint " + num(m.taint) + " past the " + num(n) + " tokens";
  for (const auto* e : {&m.reasoning, &m.hidden, &m.answers})
    if (std::string s = check_spans(*e, n, "a resident"); !s.empty()) return s;
  if (m.slot < 0) return "slot " + std::to_string(m.slot);

  // Blocks: [0, n) in order, without a gap; only the last may end off the grid.
  std::size_t next = 0;
  std::vector<std::size_t> ends;
  for (const auto& b : m.blocks) {
    if (b.a != next) return "block [" + num(b.a) + ", " + num(b.b) + ") after one ending at " + num(next);
    if (b.a % g != 0 || b.b <= b.a || b.b - b.a > g)
      return "block [" + num(b.a) + ", " + num(b.b) + ") is not a block of grid " + num(g);
    if (b.sums.size() != layout.views.size())
      return "block at " + num(b.a) + ": " + num(b.sums.size()) + " sums for " + num(layout.views.size()) +
             " views";
    next = b.b;
    ends.push_back(b.b);
  }
  if (next != n) return "the blocks cover [0, " + num(next) + "), the tokens [0, " + num(n) + ")";

  // Anchors: grid anchors ascending on the grid within the taint, then the end anchor.
  std::vector<std::size_t> ats;
  std::size_t last = 0;
  bool grid_seen = false;
  for (std::size_t i = 0; i < m.anchors.size(); ++i) {
    const auto& a = m.anchors[i];
    if (a.sums.size() != layout.sections.size())
      return "anchor at " + num(a.at) + ": " + num(a.sums.size()) + " sums for " +
             num(layout.sections.size()) + " sections";
    if (a.end) {
      if (i + 1 != m.anchors.size()) return "the end anchor is not the last anchor";
      if (!m.end || m.end->at != a.at) return "the end anchor at " + num(a.at) + " has no end record there";
      if (a.at > n) return "the end anchor at " + num(a.at) + " past the " + num(n) + " tokens";
    } else {
      if (a.at % g != 0 || a.at > m.taint || (grid_seen && a.at <= last))
        return "grid anchor at " + num(a.at) + ": not ascending on the grid within the taint " + num(m.taint);
      grid_seen = true;
      last = a.at;
    }
    ats.push_back(a.at);
  }
  if (m.end) {
    if (m.anchors.empty() || !m.anchors.back().end) return "an end record without its end anchor";
    const spill_end& e = *m.end;
    if (e.prompt_len > e.at) return "the end record's prompt_len past its position";
    for (const auto* s : {&e.reasoning, &e.hidden, &e.answers})
      if (std::string err = check_spans(*s, e.at, "an end record's"); !err.empty()) return err;
  }

  // Names: what the names functions make of each ref.
  const std::vector<std::uint64_t> block_prefix = spill_prefix_hashes(m.tokens, ends);
  for (std::size_t i = 0; i < m.blocks.size(); ++i) {
    const auto& b = m.blocks[i];
    if (b.name != spill_block_name(block_prefix[i], b.a, b.b, b.sums))
      return "block [" + num(b.a) + ", " + num(b.b) + "): name " + hex(b.name) + " is not its content's";
  }
  std::vector<std::size_t> sorted_ats = ats;
  std::sort(sorted_ats.begin(), sorted_ats.end());
  const std::vector<std::uint64_t> anchor_prefix = spill_prefix_hashes(m.tokens, sorted_ats);
  for (const auto& a : m.anchors) {
    const auto k = static_cast<std::size_t>(std::lower_bound(sorted_ats.begin(), sorted_ats.end(), a.at) -
                                            sorted_ats.begin());
    if (a.name != spill_anchor_name(anchor_prefix[k], a.at, a.end, a.sums))
      return "anchor at " + num(a.at) + ": name " + hex(a.name) + " is not its content's";
  }
  return {};
}

std::vector<unsigned char> encode_spill_manifest(const state_layout& layout, const spill_manifest& m) {
  if (std::string e = check_spill_manifest(layout, m); !e.empty())
    throw std::invalid_argument("spill manifest: " + e);
  const std::vector<std::uint8_t> payload = json::to_cbor(to_payload(m));
  bytes b(sf::manifest_fixed_bytes, 0);
  store::put_preamble(b, sf::manifest_magic, sf::version, sf::manifest_fixed_bytes,
                      static_cast<std::uint32_t>(layout.grid), layout.fingerprint,
                      sf::manifest_fixed_bytes + payload.size());
  put_u64(b, sf::manifest_offset::id, m.id);
  put_u64(b, sf::manifest_offset::payload_bytes, payload.size());
  put_u32(b, sf::manifest_offset::payload_crc, crc32(payload.data(), payload.size()));
  store::seal_header(b, sf::manifest_fixed_bytes);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

spill_decode<sf::manifest_header> read_spill_manifest_header(const unsigned char* d, std::size_t size) {
  using R = spill_decode<sf::manifest_header>;
  R r;
  sf::manifest_header& h = r.value;
  if (auto p = store::read_preamble(d, size, sf::manifest_fixed_bytes, sf::manifest_magic, {sf::version}, h))
    return R::failure(std::move(p));
  if (auto p = store::check_header(d, size, h, sf::manifest_fixed_bytes)) return R::failure(std::move(p));
  if (get_u32(d + sf::manifest_offset::reserved) != 0)
    return R::failure(fault::bad_header, "reserved field not 0");
  h.id = get_u64(d + sf::manifest_offset::id);
  h.payload_bytes = get_u64(d + sf::manifest_offset::payload_bytes);
  h.payload_crc = get_u32(d + sf::manifest_offset::payload_crc);
  if (h.payload_bytes > sf::max_manifest_bytes)
    return R::failure(fault::bad_header, "a payload of " + num(h.payload_bytes) + " bytes");
  return r;
}

spill_decode<spill_manifest> decode_spill_manifest(const unsigned char* d, std::size_t size,
                                                   const state_layout& layout, std::uint64_t expected_id) {
  using R = spill_decode<spill_manifest>;
  auto hr = read_spill_manifest_header(d, size);
  if (!hr.ok()) return R::from(hr);
  const sf::manifest_header& h = hr.value;
  if (std::string e = foreign_engine(h, layout); !e.empty()) return R::failure(fault::foreign_engine, e);
  if (h.id != expected_id)
    return R::failure(fault::wrong_place, "manifest " + hex(h.id) + ", expected " + hex(expected_id));
  R r;
  if (auto p = store::check_length(h.file_bytes, sf::manifest_fixed_bytes + h.payload_bytes, size))
    return R::failure(std::move(p));
  const unsigned char* p = d + sf::manifest_fixed_bytes;
  const auto n = static_cast<std::size_t>(h.payload_bytes);
  const std::uint32_t c = crc32(p, n);
  if (c != h.payload_crc)
    return R::failure(fault::bad_crc, "payload crc32 " + hex(c) + ", stored " + hex(h.payload_crc));
  const json j = json::from_cbor(p, p + n, true, false);
  if (j.is_discarded()) return R::failure(fault::bad_payload, "the payload is not CBOR");
  try {
    r.value = from_payload(j);
  } catch (const std::exception& e) {
    return R::failure(fault::bad_payload, e.what());
  }
  if (r.value.id != h.id)
    return R::failure(fault::bad_payload, "payload id " + hex(r.value.id) + ", header id " + hex(h.id));
  if (std::string e = check_spill_manifest(layout, r.value); !e.empty())
    return R::failure(fault::bad_payload, e);
  return r;
}

}  // namespace anchorage
