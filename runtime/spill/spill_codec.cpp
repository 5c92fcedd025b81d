// File sizes, names, block files and anchor files. Manifests: runtime/spill/spill_manifest_codec.cpp.
#include "runtime/spill/spill_codec.hpp"

#include <cstring>
#include <stdexcept>

#include "runtime/spill/spill_codec_detail.hpp"

namespace anchorage {
using namespace spill_codec_detail;

namespace {

std::size_t grid_of(const state_layout& l) { return static_cast<std::size_t>(l.grid); }

std::size_t block_header_bytes(std::size_t views) {
  return sf::block_fixed_bytes + views * sf::sum_entry_bytes;
}
std::size_t anchor_header_bytes(std::size_t sections) {
  return sf::anchor_fixed_bytes + sections * sf::sum_entry_bytes;
}

// "<prefix><16 hex><suffix>"
std::string file_name(const char* prefix, std::uint64_t v, const char* suffix) {
  return std::string(prefix) + hex(v) + suffix;
}
bool parse_name(const std::string& file, const char* prefix, const char* suffix, std::uint64_t& v) {
  const std::size_t p = std::strlen(prefix), q = std::strlen(suffix);
  if (file.size() != p + 16 + q || file.compare(0, p, prefix) != 0 || file.compare(p + 16, q, suffix) != 0)
    return false;
  std::uint64_t out = 0;
  for (std::size_t i = p; i < p + 16; ++i) {
    const char c = file[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    out = (out << 4) | static_cast<std::uint64_t>(d);
  }
  v = out;
  return true;
}

// The ref's place fits the layout's grid (the caller's contract when encoding).
void check_ref(const state_layout& l, const spill_block_ref& ref, const std::vector<token_id>& tokens) {
  const std::size_t g = grid_of(l);
  if (g == 0 || ref.a % g != 0 || ref.b <= ref.a || ref.b - ref.a > g)
    throw std::invalid_argument("spill block [" + num(ref.a) + ", " + num(ref.b) +
                                ") is not a block of grid " + num(g));
  if (ref.sums.size() != l.views.size())
    throw std::invalid_argument("spill block: " + num(ref.sums.size()) + " sums for " + num(l.views.size()) +
                                " views");
  if (tokens.size() < ref.b)
    throw std::invalid_argument("spill block: " + num(tokens.size()) + " tokens, the block ends at " +
                                num(ref.b));
}

}  // namespace

std::uint64_t spill_block_file_bytes(const state_layout& layout, std::size_t a, std::size_t b) {
  const std::uint64_t n = b - a;
  std::uint64_t bytes = block_header_bytes(layout.views.size()) + n * sf::token_bytes;
  for (const auto& v : layout.views) bytes += n * v.bytes_per_token;
  return bytes;
}

std::uint64_t spill_anchor_file_bytes(const state_layout& layout) {
  return anchor_header_bytes(layout.sections.size()) + layout.section_bytes();
}

std::string spill_block_file(std::uint64_t name) {
  return file_name(sf::block_prefix, name, sf::block_suffix);
}
std::string spill_anchor_file(std::uint64_t name) {
  return file_name(sf::anchor_prefix, name, sf::anchor_suffix);
}
std::string spill_manifest_file(std::uint64_t id) {
  return file_name(sf::manifest_prefix, id, sf::manifest_suffix);
}
bool parse_spill_block_file(const std::string& file, std::uint64_t& name) {
  return parse_name(file, sf::block_prefix, sf::block_suffix, name);
}
bool parse_spill_anchor_file(const std::string& file, std::uint64_t& name) {
  return parse_name(file, sf::anchor_prefix, sf::anchor_suffix, name);
}
bool parse_spill_manifest_file(const std::string& file, std::uint64_t& id) {
  return parse_name(file, sf::manifest_prefix, sf::manifest_suffix, id);
}

// ---- Block files ----------------------------------------------------------------------------

std::vector<unsigned char> encode_spill_block_head(const state_layout& layout, const spill_block_ref& ref,
                                                   const std::vector<token_id>& tokens,
                                                   const std::vector<const unsigned char*>& rows) {
  check_ref(layout, ref, tokens);
  if (rows.size() != layout.views.size())
    throw std::invalid_argument("spill block: rows of " + num(rows.size()) + " views, the layout has " +
                                num(layout.views.size()));
  const std::size_t n = ref.b - ref.a;
  const std::size_t hb = block_header_bytes(layout.views.size());
  bytes b(hb + n * sf::token_bytes, 0);
  store::put_preamble(b, sf::block_magic, sf::version, hb, static_cast<std::uint32_t>(layout.grid),
                      layout.fingerprint, spill_block_file_bytes(layout, ref.a, ref.b));
  put_u64(b, sf::block_offset::name, ref.name);
  put_u64(b, sf::block_offset::a, ref.a);
  put_u64(b, sf::block_offset::b, ref.b);
  put_u32(b, sf::block_offset::view_count, static_cast<std::uint32_t>(layout.views.size()));
  for (std::size_t i = 0; i < n; ++i)
    put_u32(b, hb + i * sf::token_bytes, static_cast<std::uint32_t>(tokens[ref.a + i]));
  put_u32(b, sf::block_offset::tokens_crc, crc32(b.data() + hb, n * sf::token_bytes));
  for (std::size_t v = 0; v < layout.views.size(); ++v) {
    const std::size_t bpt = layout.views[v].bytes_per_token;
    put_entry(b, sf::block_fixed_bytes + v * sf::sum_entry_bytes, bpt, ref.sums[v], crc32(rows[v], n * bpt));
  }
  store::seal_header(b, hb);
  return b;
}

std::vector<unsigned char> encode_spill_block(const state_layout& layout, const spill_block_ref& ref,
                                              const std::vector<token_id>& tokens,
                                              const std::vector<std::vector<unsigned char>>& rows) {
  std::vector<const unsigned char*> ptrs;
  for (std::size_t v = 0; v < rows.size(); ++v) {
    if (v < layout.views.size() && rows[v].size() != (ref.b - ref.a) * layout.views[v].bytes_per_token)
      throw std::invalid_argument("spill block: view " + num(v) + " holds " + num(rows[v].size()) + " bytes");
    ptrs.push_back(rows[v].data());
  }
  bytes out = encode_spill_block_head(layout, ref, tokens, ptrs);
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

spill_decode<sf::block_header> read_spill_block_header(const unsigned char* d, std::size_t size) {
  using R = spill_decode<sf::block_header>;
  R r;
  sf::block_header& h = r.value;
  if (auto p = store::read_preamble(d, size, sf::block_fixed_bytes, sf::block_magic, {sf::version}, h))
    return R::failure(std::move(p));
  const std::uint32_t count = get_u32(d + sf::block_offset::view_count);
  if (count > sf::max_table_entries) return R::failure(fault::bad_header, num(count) + " views");
  if (auto p = store::check_header(d, size, h, block_header_bytes(count))) return R::failure(std::move(p));
  if (get_u64(d + sf::block_offset::reserved) != 0)
    return R::failure(fault::bad_header, "reserved field not 0");
  h.name = get_u64(d + sf::block_offset::name);
  h.a = get_u64(d + sf::block_offset::a);
  h.b = get_u64(d + sf::block_offset::b);
  h.tokens_crc = get_u32(d + sf::block_offset::tokens_crc);
  if (h.grid == 0 || h.a % h.grid != 0 || h.b <= h.a || h.b - h.a > h.grid)
    return R::failure(fault::bad_header,
                      "[" + num(h.a) + ", " + num(h.b) + ") is not a block of grid " + num(h.grid));
  h.views.resize(count);
  for (std::size_t v = 0; v < count; ++v)
    if (!get_entry(d + sf::block_fixed_bytes + v * sf::sum_entry_bytes, h.views[v]))
      return R::failure(fault::bad_header, "view " + num(v) + ": reserved field not 0");
  return r;
}

std::string spill_foreign_block(const sf::block_header& h, const state_layout& layout) {
  if (std::string e = foreign_engine(h, layout); !e.empty()) return e;
  if (h.views.size() != layout.views.size())
    return num(h.views.size()) + " views, this engine's layout has " + num(layout.views.size());
  for (std::size_t v = 0; v < h.views.size(); ++v)
    if (h.views[v].size != layout.views[v].bytes_per_token)
      return "view " + layout.views[v].name + ": " + num(h.views[v].size) + " bytes a row, the layout's " +
             num(layout.views[v].bytes_per_token);
  return {};
}

spill_decode<spill_block_view> verify_spill_block(const unsigned char* d, std::size_t size,
                                                  const state_layout& layout, const spill_block_ref& ref,
                                                  const std::vector<token_id>& tokens,
                                                  const std::vector<unsigned char*>& into) {
  using R = spill_decode<spill_block_view>;
  if (!into.empty() && into.size() != layout.views.size())
    throw std::invalid_argument("verify_spill_block: " + num(into.size()) + " destinations for " +
                                num(layout.views.size()) + " views");
  auto hr = read_spill_block_header(d, size);
  if (!hr.ok()) return R::from(hr);
  const sf::block_header& h = hr.value;
  if (std::string e = spill_foreign_block(h, layout); !e.empty()) return R::failure(fault::foreign_engine, e);
  if (h.name != ref.name || h.a != ref.a || h.b != ref.b)
    return R::failure(fault::wrong_place, "block " + hex(h.name) + " [" + num(h.a) + ", " + num(h.b) +
                                              "), the manifest's is " + hex(ref.name) + " [" + num(ref.a) +
                                              ", " + num(ref.b) + ")");
  R r;
  if (auto p = store::check_length(h.file_bytes, spill_block_file_bytes(layout, ref.a, ref.b), size))
    return R::failure(std::move(p));
  if (ref.sums.size() != layout.views.size())
    return R::failure(fault::wrong_sums, num(ref.sums.size()) + " sums in the manifest for " +
                                             num(layout.views.size()) + " views");
  const std::size_t n = ref.b - ref.a;
  const unsigned char* at = d + h.header_bytes;
  if (crc32(at, n * sf::token_bytes) != h.tokens_crc) return R::failure(fault::bad_crc, "the token ids");
  if (tokens.size() < ref.b)
    return R::failure(fault::wrong_tokens, "the block ends at " + num(ref.b) + ", the manifest holds " +
                                               num(tokens.size()) + " tokens");
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<token_id>(get_u32(at + i * sf::token_bytes));
    if (id != tokens[ref.a + i])
      return R::failure(fault::wrong_tokens, "position " + num(ref.a + i) + ": id " + std::to_string(id) +
                                                 ", the manifest's " + std::to_string(tokens[ref.a + i]));
  }
  at += n * sf::token_bytes;
  r.value.rows.reserve(layout.views.size());
  for (std::size_t v = 0; v < layout.views.size(); ++v) {
    const std::size_t len = n * layout.views[v].bytes_per_token;
    if (!check_block(r, "view " + layout.views[v].name, h.views[v], at, len, ref.sums[v],
                     into.empty() ? nullptr : into[v]))
      return r;
    r.value.rows.push_back(at);
    at += len;
  }
  return r;
}

// ---- Anchor files ---------------------------------------------------------------------------

std::vector<unsigned char> encode_spill_anchor_head(const state_layout& layout, const spill_anchor_ref& ref,
                                                    const std::vector<const unsigned char*>& sections) {
  if (ref.sums.size() != layout.sections.size() || sections.size() != layout.sections.size())
    throw std::invalid_argument("spill anchor: " + num(ref.sums.size()) + " sums and " +
                                num(sections.size()) + " sections for " + num(layout.sections.size()) +
                                " layout sections");
  const std::size_t hb = anchor_header_bytes(layout.sections.size());
  bytes b(hb, 0);
  store::put_preamble(b, sf::anchor_magic, sf::version, hb, static_cast<std::uint32_t>(layout.grid),
                      layout.fingerprint, spill_anchor_file_bytes(layout));
  put_u64(b, sf::anchor_offset::name, ref.name);
  put_u64(b, sf::anchor_offset::at, ref.at);
  put_u32(b, sf::anchor_offset::end, ref.end ? 1 : 0);
  put_u32(b, sf::anchor_offset::section_count, static_cast<std::uint32_t>(layout.sections.size()));
  for (std::size_t s = 0; s < layout.sections.size(); ++s) {
    const std::size_t n = layout.sections[s].bytes;
    put_entry(b, sf::anchor_fixed_bytes + s * sf::sum_entry_bytes, n, ref.sums[s], crc32(sections[s], n));
  }
  store::seal_header(b, hb);
  return b;
}

std::vector<unsigned char> encode_spill_anchor(const state_layout& layout, const spill_anchor_ref& ref,
                                               const std::vector<std::vector<unsigned char>>& sections) {
  std::vector<const unsigned char*> ptrs;
  for (std::size_t s = 0; s < sections.size(); ++s) {
    if (s < layout.sections.size() && sections[s].size() != layout.sections[s].bytes)
      throw std::invalid_argument("spill anchor: section " + num(s) + " holds " + num(sections[s].size()) +
                                  " bytes");
    ptrs.push_back(sections[s].data());
  }
  bytes out = encode_spill_anchor_head(layout, ref, ptrs);
  for (const auto& s : sections) out.insert(out.end(), s.begin(), s.end());
  return out;
}

spill_decode<sf::anchor_header> read_spill_anchor_header(const unsigned char* d, std::size_t size) {
  using R = spill_decode<sf::anchor_header>;
  R r;
  sf::anchor_header& h = r.value;
  if (auto p = store::read_preamble(d, size, sf::anchor_fixed_bytes, sf::anchor_magic, {sf::version}, h))
    return R::failure(std::move(p));
  const std::uint32_t count = get_u32(d + sf::anchor_offset::section_count);
  if (count > sf::max_table_entries) return R::failure(fault::bad_header, num(count) + " sections");
  if (auto p = store::check_header(d, size, h, anchor_header_bytes(count))) return R::failure(std::move(p));
  if (get_u64(d + sf::anchor_offset::reserved) != 0)
    return R::failure(fault::bad_header, "reserved field not 0");
  const std::uint32_t end = get_u32(d + sf::anchor_offset::end);
  if (end > 1) return R::failure(fault::bad_header, "end flag " + num(end));
  h.name = get_u64(d + sf::anchor_offset::name);
  h.at = get_u64(d + sf::anchor_offset::at);
  h.end = end == 1;
  if (!h.end && (h.grid == 0 || h.at % h.grid != 0))
    return R::failure(fault::bad_header, "a grid anchor at " + num(h.at) + " off grid " + num(h.grid));
  h.sections.resize(count);
  for (std::size_t s = 0; s < count; ++s)
    if (!get_entry(d + sf::anchor_fixed_bytes + s * sf::sum_entry_bytes, h.sections[s]))
      return R::failure(fault::bad_header, "section " + num(s) + ": reserved field not 0");
  return r;
}

std::string spill_foreign_anchor(const sf::anchor_header& h, const state_layout& layout) {
  if (std::string e = foreign_engine(h, layout); !e.empty()) return e;
  if (h.sections.size() != layout.sections.size())
    return num(h.sections.size()) + " sections, this engine's layout has " + num(layout.sections.size());
  for (std::size_t s = 0; s < h.sections.size(); ++s)
    if (h.sections[s].size != layout.sections[s].bytes)
      return "section " + layout.sections[s].name + ": " + num(h.sections[s].size) + " bytes, the layout's " +
             num(layout.sections[s].bytes);
  return {};
}

spill_decode<spill_anchor_view> verify_spill_anchor(const unsigned char* d, std::size_t size,
                                                    const state_layout& layout, const spill_anchor_ref& ref) {
  using R = spill_decode<spill_anchor_view>;
  auto hr = read_spill_anchor_header(d, size);
  if (!hr.ok()) return R::from(hr);
  const sf::anchor_header& h = hr.value;
  if (std::string e = spill_foreign_anchor(h, layout); !e.empty())
    return R::failure(fault::foreign_engine, e);
  if (h.name != ref.name || h.at != ref.at || h.end != ref.end)
    return R::failure(fault::wrong_place, "anchor " + hex(h.name) + " at " + num(h.at) +
                                              (h.end ? " (end)" : "") + ", the manifest's is " +
                                              hex(ref.name) + " at " + num(ref.at) +
                                              (ref.end ? " (end)" : ""));
  R r;
  if (auto p = store::check_length(h.file_bytes, spill_anchor_file_bytes(layout), size))
    return R::failure(std::move(p));
  if (ref.sums.size() != layout.sections.size())
    return R::failure(fault::wrong_sums, num(ref.sums.size()) + " sums in the manifest for " +
                                             num(layout.sections.size()) + " sections");
  const unsigned char* at = d + h.header_bytes;
  r.value.sections.reserve(layout.sections.size());
  for (std::size_t s = 0; s < layout.sections.size(); ++s) {
    const std::size_t len = layout.sections[s].bytes;
    if (!check_block(r, "section " + layout.sections[s].name, h.sections[s], at, len, ref.sums[s])) return r;
    r.value.sections.push_back(at);
    at += len;
  }
  return r;
}

}  // namespace anchorage
