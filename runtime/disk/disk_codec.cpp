// Prefix hashes, file sizes and chunk files. Anchor files: runtime/disk/disk_codec_anchor.cpp.
#include "runtime/disk/disk_codec.hpp"

#include <xxhash.h>

#include "runtime/disk/disk_codec_detail.hpp"

namespace anchorage {
using namespace disk_codec_detail;

namespace {

bool host_is_little_endian() {
  const std::uint32_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// Feeds ids [a, b) to the hash as int32 little-endian bytes.
void hash_ids(XXH3_state_t* st, const token_id* tokens, std::size_t a, std::size_t b) {
  if (host_is_little_endian()) {
    XXH3_64bits_update(st, tokens + a, (b - a) * sizeof(token_id));
    return;
  }
  bytes le((b - a) * df::token_bytes);
  for (std::size_t i = a; i < b; ++i)
    put_u32(le, df::token_bytes * (i - a), static_cast<std::uint32_t>(tokens[i]));
  XXH3_64bits_update(st, le.data(), le.size());
}

}  // namespace

std::uint64_t prefix_hash(const token_id* tokens, std::size_t n) {
  if (host_is_little_endian()) return XXH3_64bits(tokens, n * sizeof(token_id));
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  hash_ids(st, tokens, 0, n);
  const std::uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

std::vector<std::uint64_t> chunk_hashes(const std::vector<token_id>& tokens, std::size_t line_b,
                                        std::size_t grid) {
  if (grid == 0 || line_b == 0 || tokens.size() < line_b)
    throw std::invalid_argument("chunk_hashes: line " + num(line_b) + " on grid " + num(grid) + " over " +
                                num(tokens.size()) + " tokens");
  // XXH3's streaming digest is the one-shot hash of everything fed so far.
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  std::vector<std::uint64_t> out;
  std::size_t done = 0;
  for (std::size_t b = grid; b <= line_b; b += grid) {
    hash_ids(st, tokens.data(), b - grid, b);
    out.push_back(XXH3_64bits_digest(st));
    done = b;
  }
  if (done < line_b) {  // a line off the grid: its own hash ends the chain
    hash_ids(st, tokens.data(), done, line_b);
    out.push_back(XXH3_64bits_digest(st));
  }
  XXH3_freeState(st);
  return out;
}

std::size_t chunk_file_bytes(const state_layout& l) {
  return chunk_file_bytes(l, static_cast<std::size_t>(l.grid));
}

std::size_t chunk_file_bytes(const state_layout& l, std::size_t line) {
  const std::size_t r = l.grid > 0 ? df::chunk_rows(line, static_cast<std::size_t>(l.grid)) : 0;
  return df::chunk_fixed_bytes + l.views.size() * df::entry_bytes + r * df::token_bytes + r * l.row_bytes();
}

std::size_t anchor_file_bytes(const state_layout& l, std::size_t line_b) {
  const std::size_t chunks = l.grid > 0 ? df::chain_length(line_b, static_cast<std::size_t>(l.grid)) : 0;
  return df::anchor_fixed_bytes + 8 * chunks + l.sections.size() * df::entry_bytes + l.section_bytes();
}

std::vector<unsigned char> encode_chunk_head(const state_layout& l, std::size_t b,
                                             const std::vector<token_id>& tokens,
                                             const std::vector<const unsigned char*>& rows) {
  namespace o = df::chunk_offset;
  const std::size_t g = checked_line(l, b);
  const std::size_t r = df::chunk_rows(b, g);
  if (tokens.size() < b || rows.size() != l.views.size())
    throw std::invalid_argument("encode_chunk: line " + num(b) + " past the " + num(tokens.size()) +
                                " tokens, or " + num(rows.size()) + " views' rows for " +
                                num(l.views.size()) + " views");
  const std::size_t hb = df::chunk_fixed_bytes + l.views.size() * df::entry_bytes;
  bytes out(hb + r * df::token_bytes, 0);
  store::put_preamble(out, df::chunk_magic, df::version_of_line(b, g), hb, static_cast<std::uint32_t>(g),
                      l.fingerprint, chunk_file_bytes(l, b));
  put_u64(out, o::line, b);
  put_u64(out, o::prefix_hash, prefix_hash(tokens.data(), b));
  put_u64(out, o::parent_hash, prefix_hash(tokens.data(), b - r));
  put_u32(out, o::view_count, static_cast<std::uint32_t>(l.views.size()));
  for (std::size_t i = 0; i < r; ++i)
    put_u32(out, hb + df::token_bytes * i, static_cast<std::uint32_t>(tokens[b - r + i]));
  put_u32(out, o::tokens_crc, crc32(out.data() + hb, r * df::token_bytes));
  for (std::size_t v = 0; v < l.views.size(); ++v)
    put_entry(out, df::chunk_fixed_bytes + v * df::entry_bytes, l.views[v].name, l.views[v].bytes_per_token,
              crc32(rows[v], r * l.views[v].bytes_per_token));
  store::seal_header(out, hb);
  return out;
}

std::vector<unsigned char> encode_chunk(const state_adapter& from, std::size_t b,
                                        const std::vector<token_id>& tokens) {
  const state_layout& l = from.layout();
  const std::size_t r = df::chunk_rows(b, checked_line(l, b));
  if (b > from.valid_length() || tokens.size() < b)
    throw std::invalid_argument("encode_chunk: line " + num(b) + " past the valid length " +
                                num(from.valid_length()) + " or the " + num(tokens.size()) + " tokens");
  // The rows first, in file order after the head; then the head over them.
  const std::size_t hb = df::chunk_fixed_bytes + l.views.size() * df::entry_bytes;
  const std::size_t head_bytes = hb + r * df::token_bytes;
  bytes out(chunk_file_bytes(l, b), 0);
  std::vector<const unsigned char*> rows;
  std::size_t at = head_bytes;
  for (std::size_t v = 0; v < l.views.size(); ++v) {
    from.copy_rows_out(v, b - r, b, out.data() + at);
    rows.push_back(out.data() + at);
    at += r * l.views[v].bytes_per_token;
  }
  const bytes head = encode_chunk_head(l, b, tokens, rows);
  std::copy(head.begin(), head.end(), out.begin());
  return out;
}

decode_result<df::chunk_header> read_chunk_header(const unsigned char* d, std::size_t size) {
  namespace o = df::chunk_offset;
  using R = decode_result<df::chunk_header>;
  R r;
  auto& h = r.value;
  if (auto p = store::read_preamble(d, size, df::chunk_fixed_bytes, df::chunk_magic,
                                    {df::version, df::off_grid_version}, h))
    return R::failure(std::move(p));
  const std::uint64_t count = get_u32(d + o::view_count);
  if (auto p = store::check_header(d, size, h, df::chunk_fixed_bytes + count * df::entry_bytes))
    return R::failure(std::move(p));
  if (auto p = check_reserved(d, o::reserved)) return R::failure(std::move(p));
  h.line = get_u64(d + o::line);
  h.prefix_hash = get_u64(d + o::prefix_hash);
  h.parent_hash = get_u64(d + o::parent_hash);
  h.tokens_crc = get_u32(d + o::tokens_crc);
  if (h.grid == 0 || h.line == 0)
    return R::failure(fault::bad_header, "line " + num(h.line) + " on grid " + num(h.grid));
  if (df::version_of_line(h.line, h.grid) != h.version)
    return R::failure(fault::bad_header, "line " + num(h.line) + " on grid " + num(h.grid) +
                                             " is a version " + num(df::version_of_line(h.line, h.grid)) +
                                             " file's, not " + num(h.version) + "'s");
  for (std::uint64_t i = 0; i < count; ++i)
    h.views.push_back(get_entry(d + df::chunk_fixed_bytes + i * df::entry_bytes));
  return r;
}

decode_result<chunk_view> verify_chunk(const unsigned char* d, std::size_t size, const state_layout& l,
                                       const std::vector<token_id>& prompt, std::size_t b) {
  using R = decode_result<chunk_view>;
  const auto hr = read_chunk_header(d, size);
  if (!hr.ok()) return R::from(hr);
  const df::chunk_header& h = hr.value;
  R r;
  if (auto p = check_engine(h, l)) return R::failure(std::move(p));
  const std::size_t g = h.grid;
  const std::size_t rc = df::chunk_rows(b, g);
  if (h.line != b)
    return R::failure(fault::wrong_line, "the file holds line " + num(h.line) + ", asked for line " + num(b));
  if (prompt.size() < b)
    return R::failure(fault::wrong_prefix,
                      "line " + num(b) + " is past the prompt's " + num(prompt.size()) + " tokens");
  std::vector<std::size_t> to_layout;
  const std::string bad = match_entries(
      h.views, l.views, "view", [](const view_info& v) { return v.bytes_per_token; }, to_layout);
  if (!bad.empty()) return R::failure(fault::layout_mismatch, bad);
  if (auto p = store::check_length(h.file_bytes, chunk_file_bytes(l, b), size))
    return R::failure(std::move(p));

  // The ids: their crc first (a flipped bit is damage, not another prompt), then each one
  // against the prompt; the hashes then say the whole prefix below is the prompt's too.
  const unsigned char* tok = d + h.header_bytes;
  const std::uint32_t tcrc = crc32(tok, rc * df::token_bytes);
  if (tcrc != h.tokens_crc)
    return R::failure(fault::bad_crc, "tokens block: crc32 " + hex(tcrc) + ", stored " + hex(h.tokens_crc));
  for (std::size_t i = 0; i < rc; ++i) {
    const auto t = static_cast<token_id>(get_u32(tok + df::token_bytes * i));
    if (t != prompt[b - rc + i])
      return R::failure(fault::wrong_prefix, "token at position " + num(b - rc + i) + " is " +
                                                 std::to_string(t) + " in the file, " +
                                                 std::to_string(prompt[b - rc + i]) + " in the prompt");
  }
  if (prefix_hash(prompt.data(), b) != h.prefix_hash)
    return R::failure(fault::wrong_prefix, "prefix hash of [0, " + num(b) + ") differs from the prompt's");
  if (prefix_hash(prompt.data(), b - rc) != h.parent_hash)
    return R::failure(fault::wrong_prefix,
                      "parent hash of [0, " + num(b - rc) + ") differs from the prompt's");

  const unsigned char* at = tok + rc * df::token_bytes;
  r.value.rows.resize(l.views.size());
  for (std::size_t i = 0; i < h.views.size(); ++i) {
    const std::size_t n = rc * h.views[i].size;
    const std::uint32_t c = crc32(at, n);
    if (c != h.views[i].crc)
      return R::failure(fault::bad_crc, "view " + h.views[i].name + " rows [" + num(b - rc) + ", " + num(b) +
                                            "): crc32 " + hex(c) + ", stored " + hex(h.views[i].crc));
    r.value.rows[to_layout[i]] = at;
    at += n;
  }
  chunk_view& v = r.value;
  v.fingerprint = h.fingerprint;
  v.line = b;
  v.grid = g;
  v.row_count = rc;
  return r;
}

decode_result<chunk_read> decode_chunk(const unsigned char* d, std::size_t size, const state_layout& l,
                                       const std::vector<token_id>& prompt, std::size_t b) {
  const auto vr = verify_chunk(d, size, l, prompt, b);
  if (!vr.ok()) return decode_result<chunk_read>::from(vr);
  const chunk_view& view = vr.value;
  decode_result<chunk_read> r;
  chunk_read& v = r.value;
  v.fingerprint = view.fingerprint;
  v.line = view.line;
  v.grid = view.grid;
  v.row_count = view.row_count;
  v.prefix_hash = prefix_hash(prompt.data(), b);
  v.tokens.assign(prompt.begin() + static_cast<long>(b - view.row_count),
                  prompt.begin() + static_cast<long>(b));
  v.rows.resize(l.views.size());
  for (std::size_t i = 0; i < l.views.size(); ++i)
    v.rows[i].assign(view.rows[i], view.rows[i] + view.row_count * l.views[i].bytes_per_token);
  return r;
}

decode_result<chunk_read> decode_chunk(const std::vector<unsigned char>& bytes, const state_layout& l,
                                       const std::vector<token_id>& prompt, std::size_t b) {
  return decode_chunk(bytes.data(), bytes.size(), l, prompt, b);
}

void apply_chunk(state_adapter& into, const chunk_view& view) {
  const state_layout& l = into.layout();
  if (view.fingerprint != l.fingerprint || view.rows.size() != l.views.size() ||
      view.grid != static_cast<std::size_t>(l.grid) || view.row_count != df::chunk_rows(view.line, view.grid))
    throw std::invalid_argument("apply_chunk: the chunk was verified against another layout");
  for (const auto& v : l.views)
    if (view.line > v.capacity)
      throw std::out_of_range("apply_chunk: line " + num(view.line) + " past the capacity of view " + v.name);
  for (std::size_t v = 0; v < l.views.size(); ++v)
    into.copy_rows_in(v, view.line - view.row_count, view.line, view.rows[v]);
}

void apply_chunk(state_adapter& into, const chunk_read& read) {
  const state_layout& l = into.layout();
  if (read.fingerprint != l.fingerprint || read.rows.size() != l.views.size() ||
      read.grid != static_cast<std::size_t>(l.grid) || read.row_count != df::chunk_rows(read.line, read.grid))
    throw std::invalid_argument("apply_chunk: the chunk was decoded against another layout");
  for (std::size_t v = 0; v < l.views.size(); ++v) {
    if (read.rows[v].size() != read.row_count * l.views[v].bytes_per_token)
      throw std::invalid_argument("apply_chunk: rows of view " + l.views[v].name + " have the wrong size");
    if (read.line > l.views[v].capacity)
      throw std::out_of_range("apply_chunk: line " + num(read.line) + " past the capacity of view " +
                              l.views[v].name);
  }
  for (std::size_t v = 0; v < l.views.size(); ++v)
    into.copy_rows_in(v, read.line - read.row_count, read.line, read.rows[v].data());
}

}  // namespace anchorage
