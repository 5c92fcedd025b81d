// The session spill's codecs (runtime/spill/spill_codec.hpp): any bytes as a block, an anchor and
// a manifest file, each header reader and each verify or decode against a small layout, with the
// place, names and sums the file's own header claims (so a mutated file gets as far as its
// bytes allow). Bad bytes never throw; a failed decode names its fault; a manifest that decodes
// passes check_spill_manifest and re-encodes to bytes that decode to the same manifest.
//
// Input: one byte of switches, then the file. Bit 0 reseals the header crc.
#include <exception>

#include "fuzz/record_input.hpp"
#include "runtime/spill/spill_codec.hpp"

using namespace anchorage;

namespace {

constexpr std::size_t conversation_len = 10;

const state_layout& layout() {
  static const state_layout l = fuzz::record_layout();
  return l;
}

const std::vector<token_id>& tokens() {
  static const std::vector<token_id> t = [] {
    std::vector<token_id> v;
    for (std::size_t i = 0; i < conversation_len; ++i) v.push_back(static_cast<token_id>(1000 + 31 * i));
    return v;
  }();
  return t;
}

template <class T>
void failed_cleanly(const spill_decode<T>& r) {
  if (!r.ok()) fuzz::check(!r.error.empty(), "a failed decode names its fault");
}

std::vector<spill_sum> sums_of(const std::vector<spill_format::sum_entry>& entries) {
  std::vector<spill_sum> s;
  for (const auto& e : entries) s.push_back({e.s0, e.s1});
  return s;
}

void verify_block(const std::vector<unsigned char>& f) {
  const auto h = read_spill_block_header(f.data(), f.size());
  failed_cleanly(h);
  if (!h.ok()) return;
  (void)spill_foreign_block(h.value, layout());
  spill_block_ref ref;
  ref.name = h.value.name;
  ref.a = static_cast<std::size_t>(h.value.a);
  ref.b = static_cast<std::size_t>(h.value.b);
  ref.sums = sums_of(h.value.views);
  if (ref.b > tokens().size() || ref.sums.size() != layout().views.size()) return;  // the caller's contract
  std::vector<std::vector<unsigned char>> into;
  std::vector<unsigned char*> to;
  for (const auto& v : layout().views) into.emplace_back((ref.b - ref.a) * v.bytes_per_token);
  for (auto& v : into) to.push_back(v.data());
  failed_cleanly(verify_spill_block(f.data(), f.size(), layout(), ref, tokens()));
  failed_cleanly(verify_spill_block(f.data(), f.size(), layout(), ref, tokens(), to));
}

void verify_anchor(const std::vector<unsigned char>& f) {
  const auto h = read_spill_anchor_header(f.data(), f.size());
  failed_cleanly(h);
  if (!h.ok()) return;
  (void)spill_foreign_anchor(h.value, layout());
  spill_anchor_ref ref;
  ref.name = h.value.name;
  ref.at = static_cast<std::size_t>(h.value.at);
  ref.end = h.value.end;
  ref.sums = sums_of(h.value.sections);
  if (ref.sums.size() != layout().sections.size()) return;  // the caller's contract
  failed_cleanly(verify_spill_anchor(f.data(), f.size(), layout(), ref));
}

void decode_manifest(const std::vector<unsigned char>& f) {
  const auto h = read_spill_manifest_header(f.data(), f.size());
  failed_cleanly(h);
  if (!h.ok()) return;
  const auto m = decode_spill_manifest(f.data(), f.size(), layout(), h.value.id);
  failed_cleanly(m);
  if (!m.ok()) return;
  fuzz::check(check_spill_manifest(layout(), m.value).empty(), "a decoded manifest keeps the rules");
  const auto again = encode_spill_manifest(layout(), m.value);
  const auto back = decode_spill_manifest(again.data(), again.size(), layout(), m.value.id);
  fuzz::check(back.ok(), "a re-encoded manifest decodes");
  fuzz::check(encode_spill_manifest(layout(), back.value) == again, "a manifest round-trips");
}

// A conversation of conversation_len tokens in blocks of one grid, a grid anchor at 4 and the
// end anchor: its first block, the end anchor and the manifest, as the spill writes them.
struct seed_files {
  std::vector<unsigned char> block, anchor, manifest;
};

seed_files encode_seeds() {
  const state_layout& l = layout();
  const std::size_t g = static_cast<std::size_t>(l.grid), n = tokens().size();
  spill_manifest m;
  m.session_key = "fuzz-session";
  m.tokens = tokens();
  m.id = spill_conversation_id(m.session_key, m.tokens, g);
  m.taint = n;
  m.answers = {{n / 2, n}};
  seed_files out;
  unsigned char x = 3;
  auto bytes = [&](std::size_t k) {
    std::vector<unsigned char> b(k);
    for (auto& c : b) c = x = static_cast<unsigned char>(x * 33 + 7);
    return b;
  };
  for (std::size_t a = 0; a < n; a += g) {
    spill_block_ref ref;
    ref.a = a;
    ref.b = std::min(a + g, n);
    std::vector<std::vector<unsigned char>> rows;
    for (const auto& v : l.views) {
      rows.push_back(bytes((ref.b - a) * v.bytes_per_token));
      ref.sums.push_back(host_sum(rows.back().data(), rows.back().size()));
    }
    ref.name = spill_block_name(spill_prefix_hash(m.tokens.data(), ref.b), a, ref.b, ref.sums);
    if (a == 0) out.block = encode_spill_block(l, ref, m.tokens, rows);
    m.blocks.push_back(ref);
  }
  for (std::size_t at : {g, n}) {
    spill_anchor_ref ref;
    ref.at = at;
    ref.end = at == n;
    std::vector<std::vector<unsigned char>> sections;
    for (const auto& s : l.sections) {
      sections.push_back(bytes(s.bytes));
      ref.sums.push_back(host_sum(sections.back().data(), sections.back().size()));
    }
    ref.name = spill_anchor_name(spill_prefix_hash(m.tokens.data(), at), at, ref.end, ref.sums);
    if (ref.end) out.anchor = encode_spill_anchor(l, ref, sections);
    m.anchors.push_back(ref);
  }
  spill_end e;
  e.at = n;
  e.prompt_len = n - 2;
  e.pending = m.tokens[n - 1];
  e.reasoning = {{0, 1}};
  m.end = e;
  out.manifest = encode_spill_manifest(l, m);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::vector<unsigned char> file(data + 1, data + size);
  if (data[0] & 1) fuzz::reseal_header(file);
  try {
    verify_block(file);
    verify_anchor(file);
    decode_manifest(file);
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (fuzz::seed_dir() == nullptr) return 0;
  const seed_files f = encode_seeds();
  fuzz::write_seed("block", {0}, f.block);
  fuzz::write_seed("anchor", {0}, f.anchor);
  fuzz::write_seed("manifest", {0}, f.manifest);
  std::exit(0);
}
