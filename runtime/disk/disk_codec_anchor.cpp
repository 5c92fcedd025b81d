// Anchor files (runtime/disk/disk_codec.hpp): every section at one line, with the chunk chain below.
#include "runtime/disk/disk_codec.hpp"

#include <algorithm>

#include "runtime/disk/disk_codec_detail.hpp"

namespace anchorage {
using namespace disk_codec_detail;

std::vector<unsigned char> encode_anchor_head(const state_layout& l, std::size_t b,
                                              const std::vector<std::uint64_t>& hashes,
                                              const std::vector<const unsigned char*>& sections) {
  namespace o = df::anchor_offset;
  const std::size_t g = checked_line(l, b);
  if (hashes.size() != df::chain_length(b, g))
    throw std::invalid_argument("encode_anchor: " + num(hashes.size()) + " chunk hashes for line " + num(b) +
                                " (needs " + num(df::chain_length(b, g)) + ")");
  if (sections.size() != l.sections.size())
    throw std::invalid_argument("encode_anchor: " + num(sections.size()) + " sections for " +
                                num(l.sections.size()));
  const std::size_t table = df::anchor_fixed_bytes + 8 * hashes.size();
  const std::size_t hb = table + l.sections.size() * df::entry_bytes;
  bytes out(hb, 0);
  store::put_preamble(out, df::anchor_magic, df::version_of_line(b, g), hb, static_cast<std::uint32_t>(g),
                      l.fingerprint, anchor_file_bytes(l, b));
  put_u64(out, o::line, b);
  put_u32(out, o::chunk_count, static_cast<std::uint32_t>(hashes.size()));
  put_u32(out, o::section_count, static_cast<std::uint32_t>(l.sections.size()));
  for (std::size_t i = 0; i < hashes.size(); ++i) put_u64(out, df::anchor_fixed_bytes + 8 * i, hashes[i]);
  for (std::size_t s = 0; s < l.sections.size(); ++s)
    put_entry(out, table + s * df::entry_bytes, l.sections[s].name, l.sections[s].bytes,
              crc32(sections[s], l.sections[s].bytes));
  store::seal_header(out, hb);
  return out;
}

std::vector<unsigned char> encode_anchor(const state_adapter& from, std::size_t b,
                                         const std::vector<std::uint64_t>& hashes) {
  const state_layout& l = from.layout();
  checked_line(l, b);
  const std::size_t hb = df::anchor_fixed_bytes + 8 * hashes.size() + l.sections.size() * df::entry_bytes;
  bytes out(hb + l.section_bytes(), 0);
  std::vector<const unsigned char*> sections;
  std::size_t at = hb;
  for (std::size_t s = 0; s < l.sections.size(); ++s) {
    from.copy_section_out(s, out.data() + at);
    sections.push_back(out.data() + at);
    at += l.sections[s].bytes;
  }
  const bytes head = encode_anchor_head(l, b, hashes, sections);
  std::copy(head.begin(), head.end(), out.begin());
  return out;
}

decode_result<df::anchor_header> read_anchor_header(const unsigned char* d, std::size_t size) {
  namespace o = df::anchor_offset;
  using R = decode_result<df::anchor_header>;
  R r;
  auto& h = r.value;
  if (auto p = store::read_preamble(d, size, df::anchor_fixed_bytes, df::anchor_magic,
                                    {df::anchor_version_1, df::version, df::off_grid_version}, h))
    return R::failure(std::move(p));
  const std::uint32_t version = h.version;
  const std::uint64_t chunks = get_u32(d + o::chunk_count);
  const std::uint64_t count = get_u32(d + o::section_count);
  const std::size_t esize = version == df::anchor_version_1 ? df::entry_v1_bytes : df::entry_bytes;
  const std::uint64_t table = df::anchor_fixed_bytes + 8 * chunks;
  if (auto p = store::check_header(d, size, h, table + count * esize)) return R::failure(std::move(p));
  if (auto p = check_reserved(d, o::reserved)) return R::failure(std::move(p));
  h.line = get_u64(d + o::line);
  if (h.grid == 0 || chunks == 0 || h.line == 0 || df::chain_length(h.line, h.grid) != chunks)
    return R::failure(fault::bad_header, "line " + num(h.line) + " does not stand on its " + num(chunks) +
                                             " chunks of grid " + num(h.grid));
  // Version 1 anchors sit on the grid, as version 2's; version 4's are off it.
  if (df::version_of_line(h.line, h.grid) != (version == df::anchor_version_1 ? df::version : version))
    return R::failure(fault::bad_header, "line " + num(h.line) + " on grid " + num(h.grid) +
                                             " in a version " + num(version) + " anchor");
  if (version == df::anchor_version_1 && count != 2)
    return R::failure(fault::bad_header, "a format 1 anchor has 2 sections, this one " + num(count));
  for (std::uint64_t i = 0; i < chunks; ++i)
    h.chunk_hashes.push_back(get_u64(d + df::anchor_fixed_bytes + 8 * i));
  for (std::uint64_t i = 0; i < count; ++i) {
    const unsigned char* e = d + table + i * esize;
    if (version != df::anchor_version_1)
      h.sections.push_back(get_entry(e));
    else
      h.sections.push_back({df::version_1_section_names[i], get_u64(e), get_u32(e + 8)});
  }
  return r;
}

decode_result<anchor_view> verify_anchor(const unsigned char* d, std::size_t size, const state_layout& l,
                                         const std::vector<std::uint64_t>& expected) {
  using R = decode_result<anchor_view>;
  const auto hr = read_anchor_header(d, size);
  if (!hr.ok()) return R::from(hr);
  const df::anchor_header& h = hr.value;
  R r;
  if (auto p = check_engine(h, l)) return R::failure(std::move(p));
  if (h.chunk_hashes.size() != expected.size())
    return R::failure(fault::wrong_line, "the anchor at line " + num(h.line) + " stands on " +
                                             num(h.chunk_hashes.size()) + " chunks, asked for " +
                                             num(expected.size()));
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (h.chunk_hashes[i] != expected[i])
      return R::failure(fault::wrong_chunks, "chunk hash " + num(i) + " (line " +
                                                 num(std::min<std::uint64_t>((i + 1) * h.grid, h.line)) +
                                                 ") is " + hex(h.chunk_hashes[i]) + " in the file, " +
                                                 hex(expected[i]) + " expected");
  std::vector<std::size_t> to_layout;
  const std::string bad = match_entries(
      h.sections, l.sections, "section", [](const section_info& s) { return s.bytes; }, to_layout);
  if (!bad.empty()) return R::failure(fault::layout_mismatch, bad);
  if (auto p = store::check_length(h.file_bytes, h.header_bytes + l.section_bytes(), size))
    return R::failure(std::move(p));

  const unsigned char* at = d + h.header_bytes;
  r.value.sections.resize(l.sections.size());
  for (std::size_t i = 0; i < h.sections.size(); ++i) {
    const std::size_t n = h.sections[i].size;
    const std::uint32_t c = crc32(at, n);
    if (c != h.sections[i].crc)
      return R::failure(fault::bad_crc, "section " + h.sections[i].name + ": crc32 " + hex(c) + ", stored " +
                                            hex(h.sections[i].crc));
    r.value.sections[to_layout[i]] = at;
    at += n;
  }
  r.value.fingerprint = h.fingerprint;
  r.value.line = h.line;
  return r;
}

decode_result<anchor_read> decode_anchor(const unsigned char* d, std::size_t size, const state_layout& l,
                                         const std::vector<std::uint64_t>& expected) {
  const auto vr = verify_anchor(d, size, l, expected);
  if (!vr.ok()) return decode_result<anchor_read>::from(vr);
  decode_result<anchor_read> r;
  anchor_read& v = r.value;
  v.version = get_u32(d + df::anchor_offset::version);
  v.fingerprint = vr.value.fingerprint;
  v.line = vr.value.line;
  v.chunk_hashes = expected;
  v.sections.resize(l.sections.size());
  for (std::size_t i = 0; i < l.sections.size(); ++i)
    v.sections[i].assign(vr.value.sections[i], vr.value.sections[i] + l.sections[i].bytes);
  return r;
}

decode_result<anchor_read> decode_anchor(const std::vector<unsigned char>& bytes, const state_layout& l,
                                         const std::vector<std::uint64_t>& expected) {
  return decode_anchor(bytes.data(), bytes.size(), l, expected);
}

void apply_anchor(state_adapter& into, const anchor_view& view, std::size_t b) {
  const state_layout& l = into.layout();
  if (b != view.line)
    throw std::invalid_argument("apply_anchor: line " + num(b) + ", the anchor is at " + num(view.line));
  if (view.fingerprint != l.fingerprint || view.sections.size() != l.sections.size())
    throw std::invalid_argument("apply_anchor: the anchor was verified against another layout");
  for (const auto& v : l.views)
    if (b > v.capacity)
      throw std::out_of_range("apply_anchor: line " + num(b) + " past the capacity of view " + v.name);
  for (std::size_t s = 0; s < l.sections.size(); ++s) into.copy_section_in(s, view.sections[s]);
  into.set_valid_length(b);
}

void apply_anchor(state_adapter& into, const anchor_read& read, std::size_t b) {
  const state_layout& l = into.layout();
  if (b != read.line)
    throw std::invalid_argument("apply_anchor: line " + num(b) + ", the anchor is at " + num(read.line));
  if (read.fingerprint != l.fingerprint || read.sections.size() != l.sections.size())
    throw std::invalid_argument("apply_anchor: the anchor was decoded against another layout");
  for (std::size_t s = 0; s < l.sections.size(); ++s)
    if (read.sections[s].size() != l.sections[s].bytes)
      throw std::invalid_argument("apply_anchor: section " + l.sections[s].name + " has the wrong size");
  for (const auto& v : l.views)
    if (b > v.capacity)
      throw std::out_of_range("apply_anchor: line " + num(b) + " past the capacity of view " + v.name);
  for (std::size_t s = 0; s < l.sections.size(); ++s) into.copy_section_in(s, read.sections[s].data());
  into.set_valid_length(b);
}

}  // namespace anchorage
