// Generation checkpoint files (runtime/disk/checkpoint_codec.hpp): a generation's whole state, its
// prompt and its output ids in one file.
#include "runtime/disk/checkpoint_codec.hpp"

#include "runtime/disk/disk_codec_detail.hpp"

namespace anchorage {
using namespace disk_codec_detail;

namespace {

std::size_t checkpoint_header_bytes(std::uint64_t sections, std::uint64_t views) {
  return df::checkpoint_fixed_bytes + (sections + views) * df::entry_bytes;
}

// The tokens block after the header: all there, its crc, then the ids.
decode_result<std::vector<token_id>> tokens_block(const unsigned char* d, std::size_t size,
                                                  const df::checkpoint_header& h) {
  using R = decode_result<std::vector<token_id>>;
  if (h.token_count > (size - h.header_bytes) / df::token_bytes)
    return R::failure(fault::truncated, num(size) + " bytes, the tokens block needs " +
                                            num(h.header_bytes + h.token_count * df::token_bytes));
  const unsigned char* tok = d + h.header_bytes;
  const std::size_t n = static_cast<std::size_t>(h.token_count);
  const std::uint32_t c = crc32(tok, n * df::token_bytes);
  if (c != h.tokens_crc)
    return R::failure(fault::bad_crc, "tokens block: crc32 " + hex(c) + ", stored " + hex(h.tokens_crc));
  R r;
  r.value.resize(n);
  for (std::size_t i = 0; i < n; ++i) r.value[i] = static_cast<token_id>(get_u32(tok + df::token_bytes * i));
  return r;
}

}  // namespace

std::size_t checkpoint_file_bytes(const state_layout& l, std::size_t token_count) {
  if (token_count < 2)
    throw std::invalid_argument("checkpoint_file_bytes: " + num(token_count) +
                                " ids (a checkpoint holds a prompt id and a pending one at least)");
  return checkpoint_header_bytes(l.sections.size(), l.views.size()) + token_count * df::token_bytes +
         l.section_bytes() + (token_count - 1) * l.row_bytes();
}

std::vector<unsigned char> encode_checkpoint(const state_adapter& from, const checkpoint_meta& m) {
  namespace o = df::checkpoint_offset;
  const state_layout& l = from.layout();
  const std::vector<token_id>& t = m.tokens;
  if (m.prompt_tokens == 0 || m.prompt_tokens >= t.size())
    throw std::invalid_argument("encode_checkpoint: prompt_tokens " + num(m.prompt_tokens) + " of " +
                                num(t.size()) + " ids (needs a prompt id and a pending output id after it)");
  const std::size_t rows = t.size() - 1;
  if (from.valid_length() != rows)
    throw std::invalid_argument("encode_checkpoint: the state holds " + num(from.valid_length()) +
                                " rows, the " + num(t.size()) + " ids make " + num(rows));
  const std::size_t hb = checkpoint_header_bytes(l.sections.size(), l.views.size());
  bytes out(checkpoint_file_bytes(l, t.size()), 0);
  store::put_preamble(out, df::checkpoint_magic, df::checkpoint_version, hb,
                      static_cast<std::uint32_t>(l.grid), l.fingerprint, out.size());
  put_u64(out, o::key_hash, m.key_hash);
  put_u64(out, o::seed, m.seed);
  put_u64(out, o::prompt_tokens, m.prompt_tokens);
  put_u64(out, o::token_count, t.size());
  put_u64(out, o::rows, rows);
  put_u32(out, o::flags, m.seed_explicit ? df::checkpoint_flag_seed_explicit : 0u);
  put_u32(out, o::section_count, static_cast<std::uint32_t>(l.sections.size()));
  put_u32(out, o::view_count, static_cast<std::uint32_t>(l.views.size()));
  for (std::size_t i = 0; i < t.size(); ++i)
    put_u32(out, hb + df::token_bytes * i, static_cast<std::uint32_t>(t[i]));
  put_u32(out, o::tokens_crc, crc32(out.data() + hb, t.size() * df::token_bytes));
  std::size_t at = hb + t.size() * df::token_bytes;
  std::size_t entry = df::checkpoint_fixed_bytes;
  for (std::size_t s = 0; s < l.sections.size(); ++s, entry += df::entry_bytes) {
    from.copy_section_out(s, out.data() + at);
    put_entry(out, entry, l.sections[s].name, l.sections[s].bytes,
              crc32(out.data() + at, l.sections[s].bytes));
    at += l.sections[s].bytes;
  }
  for (std::size_t v = 0; v < l.views.size(); ++v, entry += df::entry_bytes) {
    const std::size_t n = rows * l.views[v].bytes_per_token;
    from.copy_rows_out(v, 0, rows, out.data() + at);
    put_entry(out, entry, l.views[v].name, l.views[v].bytes_per_token, crc32(out.data() + at, n));
    at += n;
  }
  store::seal_header(out, hb);
  return out;
}

decode_result<df::checkpoint_header> read_checkpoint_header(const unsigned char* d, std::size_t size) {
  namespace o = df::checkpoint_offset;
  using R = decode_result<df::checkpoint_header>;
  R r;
  auto& h = r.value;
  if (auto p = store::read_preamble(d, size, df::checkpoint_fixed_bytes, df::checkpoint_magic,
                                    {df::checkpoint_version}, h))
    return R::failure(std::move(p));
  const std::uint64_t sections = get_u32(d + o::section_count);
  const std::uint64_t views = get_u32(d + o::view_count);
  if (auto p = store::check_header(d, size, h, checkpoint_header_bytes(sections, views)))
    return R::failure(std::move(p));
  if (auto p = check_reserved(d, o::reserved)) return R::failure(std::move(p));
  h.key_hash = get_u64(d + o::key_hash);
  h.seed = get_u64(d + o::seed);
  h.prompt_tokens = get_u64(d + o::prompt_tokens);
  h.token_count = get_u64(d + o::token_count);
  h.rows = get_u64(d + o::rows);
  h.flags = get_u32(d + o::flags);
  h.tokens_crc = get_u32(d + o::tokens_crc);
  if (h.grid == 0) return R::failure(fault::bad_header, "grid 0");
  if (h.token_count < 2 || h.rows != h.token_count - 1)
    return R::failure(fault::bad_header, "rows " + num(h.rows) + " with " + num(h.token_count) +
                                             " ids (rows is ids - 1, ids at least 2)");
  if (h.prompt_tokens == 0 || h.prompt_tokens >= h.token_count)
    return R::failure(fault::bad_header, "prompt_tokens " + num(h.prompt_tokens) + " of " +
                                             num(h.token_count) +
                                             " ids (a prompt and a pending output id after it)");
  if ((h.flags & ~df::checkpoint_known_flags) != 0)
    return R::failure(fault::bad_header, "unknown flags " + hex(h.flags));
  for (std::uint64_t i = 0; i < sections + views; ++i)
    (i < sections ? h.sections : h.views)
        .push_back(get_entry(d + df::checkpoint_fixed_bytes + i * df::entry_bytes));
  return r;
}

decode_result<std::vector<token_id>> read_checkpoint_tokens(const unsigned char* d, std::size_t size) {
  const auto hr = read_checkpoint_header(d, size);
  if (!hr.ok()) return decode_result<std::vector<token_id>>::from(hr);
  return tokens_block(d, size, hr.value);
}

decode_result<checkpoint_read> decode_checkpoint(const unsigned char* d, std::size_t size,
                                                 const state_layout& l, const std::vector<token_id>& prompt,
                                                 std::uint64_t expected_key_hash) {
  using R = decode_result<checkpoint_read>;
  const auto hr = read_checkpoint_header(d, size);
  if (!hr.ok()) return R::from(hr);
  const df::checkpoint_header& h = hr.value;
  R r;
  if (auto p = check_engine(h, l)) return R::failure(std::move(p));
  std::vector<std::size_t> section_to, view_to;
  std::string bad = match_entries(
      h.sections, l.sections, "section", [](const section_info& s) { return s.bytes; }, section_to);
  if (bad.empty())
    bad = match_entries(
        h.views, l.views, "view", [](const view_info& v) { return v.bytes_per_token; }, view_to);
  if (!bad.empty()) return R::failure(fault::layout_mismatch, bad);
  // The fingerprint does not cover capacities: an engine with a shorter context cannot hold it.
  for (const auto& v : l.views)
    if (h.rows > v.capacity)
      return R::failure(fault::layout_mismatch, "rows [0, " + num(h.rows) + ") past the capacity of view " +
                                                    v.name + " (" + num(v.capacity) + " rows)");
  // Bounds token_count before the length is computed from it.
  if (h.token_count > size / df::token_bytes)
    return R::failure(fault::truncated, num(size) + " bytes, " + num(h.token_count) + " ids need more");
  const auto rows = static_cast<std::size_t>(h.rows);
  if (auto p = store::check_length(h.file_bytes,
                                   checkpoint_file_bytes(l, static_cast<std::size_t>(h.token_count)), size))
    return R::failure(std::move(p));

  // The ids: their crc first (a flipped bit is damage, not another request), then the key,
  // then the stored prompt against the request's, every id.
  auto tr = tokens_block(d, size, h);
  if (!tr.ok()) return R::from(tr);
  const std::vector<token_id>& ids = tr.value;
  if (h.key_hash != expected_key_hash)
    return R::failure(fault::wrong_prefix, "key hash " + hex(h.key_hash) + " in the file, " +
                                               hex(expected_key_hash) + " expected");
  if (prompt.size() != h.prompt_tokens)
    return R::failure(fault::wrong_prefix, "the file's prompt has " + num(h.prompt_tokens) +
                                               " tokens, the request's " + num(prompt.size()));
  for (std::size_t i = 0; i < prompt.size(); ++i)
    if (ids[i] != prompt[i])
      return R::failure(fault::wrong_prefix, "token at position " + num(i) + " is " + std::to_string(ids[i]) +
                                                 " in the file, " + std::to_string(prompt[i]) +
                                                 " in the prompt");

  const unsigned char* at = d + h.header_bytes + ids.size() * df::token_bytes;
  r.value.sections.resize(l.sections.size());
  if (auto bad_crc = copy_checked_sections(at, h.sections, section_to, r.value.sections); !bad_crc.empty())
    return R::failure(fault::bad_crc, bad_crc);
  r.value.rows.resize(l.views.size());
  for (std::size_t i = 0; i < h.views.size(); ++i) {
    const std::size_t n = rows * h.views[i].size;
    const std::uint32_t c = crc32(at, n);
    if (c != h.views[i].crc)
      return R::failure(fault::bad_crc, "view " + h.views[i].name + " rows [0, " + num(rows) + "): crc32 " +
                                            hex(c) + ", stored " + hex(h.views[i].crc));
    r.value.rows[view_to[i]].assign(at, at + n);
    at += n;
  }
  checkpoint_read& v = r.value;
  v.fingerprint = h.fingerprint;
  v.meta.key_hash = h.key_hash;
  v.meta.seed = h.seed;
  v.meta.seed_explicit = (h.flags & df::checkpoint_flag_seed_explicit) != 0;
  v.meta.prompt_tokens = static_cast<std::size_t>(h.prompt_tokens);
  v.meta.tokens = std::move(tr.value);
  return r;
}

decode_result<checkpoint_read> decode_checkpoint(const std::vector<unsigned char>& bytes,
                                                 const state_layout& l, const std::vector<token_id>& prompt,
                                                 std::uint64_t expected_key_hash) {
  return decode_checkpoint(bytes.data(), bytes.size(), l, prompt, expected_key_hash);
}

void apply_checkpoint(state_adapter& into, const checkpoint_read& read) {
  const state_layout& l = into.layout();
  if (read.fingerprint != l.fingerprint || read.sections.size() != l.sections.size() ||
      read.rows.size() != l.views.size())
    throw std::invalid_argument("apply_checkpoint: the checkpoint was decoded against another layout");
  if (read.meta.tokens.size() < 2)
    throw std::invalid_argument("apply_checkpoint: " + num(read.meta.tokens.size()) +
                                " ids, no pending token");
  const std::size_t rows = read.meta.tokens.size() - 1;
  for (std::size_t s = 0; s < l.sections.size(); ++s)
    if (read.sections[s].size() != l.sections[s].bytes)
      throw std::invalid_argument("apply_checkpoint: section " + l.sections[s].name + " has the wrong size");
  for (std::size_t v = 0; v < l.views.size(); ++v) {
    if (read.rows[v].size() != rows * l.views[v].bytes_per_token)
      throw std::invalid_argument("apply_checkpoint: rows of view " + l.views[v].name +
                                  " have the wrong size");
    if (rows > l.views[v].capacity)
      throw std::out_of_range("apply_checkpoint: rows [0, " + num(rows) + ") past the capacity of view " +
                              l.views[v].name);
  }
  for (std::size_t s = 0; s < l.sections.size(); ++s) into.copy_section_in(s, read.sections[s].data());
  for (std::size_t v = 0; v < l.views.size(); ++v) into.copy_rows_in(v, 0, rows, read.rows[v].data());
  into.set_valid_length(rows);
}

}  // namespace anchorage
