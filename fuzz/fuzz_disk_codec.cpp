// The disk tier's codecs (runtime/disk/disk_codec.hpp, checkpoint_codec.hpp) over the framed
// record (runtime/store/record.hpp): any bytes as a chunk, an anchor and a checkpoint file, each
// header reader and each full decode against a small layout and a fixed prompt. Bad bytes never
// throw; a failed decode names its fault; a decode that passes gives what the header says. And a
// round trip: a state filled from the input's bytes, encoded, decodes to the same bytes.
//
// Input: one byte of switches, then the file. Bit 0 reseals the header crc; bit 1 runs the round
// trip.
#include <algorithm>
#include <cstring>
#include <exception>

#include "fuzz/record_input.hpp"
#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/engine/state_adapter.hpp"

using namespace anchorage;

namespace {

constexpr std::size_t prompt_len = 64;

const std::vector<token_id>& prompt() {
  static const std::vector<token_id> p = [] {
    std::vector<token_id> t;
    for (std::size_t i = 0; i < prompt_len; ++i) t.push_back(static_cast<token_id>(i * 7 + 1));
    return t;
  }();
  return p;
}

const state_layout& layout() {
  static const state_layout l = fuzz::record_layout();
  return l;
}

// Host memory in the layout's shape.
class host_state final : public state_adapter {
 public:
  explicit host_state(const state_layout& l) : l_(l) {
    for (const auto& s : l.sections) sections_.emplace_back(s.bytes, 0);
    for (const auto& v : l.views) views_.emplace_back(v.bytes_per_token * v.capacity, 0);
  }
  void fill(const std::uint8_t* data, std::size_t size) {
    std::size_t k = 0;
    auto next = [&] { return size == 0 ? static_cast<unsigned char>(k++) : data[k++ % size]; };
    for (auto& s : sections_) std::generate(s.begin(), s.end(), next);
    for (auto& v : views_) std::generate(v.begin(), v.end(), next);
  }
  const state_layout& layout() const override { return l_; }
  void copy_section_out(std::size_t s, void* dst) const override {
    std::memcpy(dst, sections_.at(s).data(), sections_[s].size());
  }
  void copy_section_in(std::size_t s, const void* src) override {
    std::memcpy(sections_.at(s).data(), src, sections_[s].size());
  }
  void copy_rows_out(std::size_t v, std::size_t a, std::size_t b, void* dst) const override {
    const std::size_t bpt = l_.views.at(v).bytes_per_token;
    fuzz::check(a <= b && b <= l_.views[v].capacity, "rows inside the capacity");
    std::memcpy(dst, views_[v].data() + a * bpt, (b - a) * bpt);
  }
  void copy_rows_in(std::size_t v, std::size_t a, std::size_t b, const void* src) override {
    const std::size_t bpt = l_.views.at(v).bytes_per_token;
    fuzz::check(a <= b && b <= l_.views[v].capacity, "rows inside the capacity");
    std::memcpy(views_[v].data() + a * bpt, src, (b - a) * bpt);
  }
  std::size_t valid_length() const override { return valid_; }
  void set_valid_length(std::size_t n) override { valid_ = n; }

  const std::vector<std::vector<unsigned char>>& sections() const { return sections_; }
  std::vector<unsigned char> rows(std::size_t v, std::size_t a, std::size_t b) const {
    const std::size_t bpt = l_.views[v].bytes_per_token;
    return {views_[v].begin() + static_cast<long>(a * bpt), views_[v].begin() + static_cast<long>(b * bpt)};
  }

 private:
  const state_layout& l_;
  std::vector<std::vector<unsigned char>> sections_, views_;
  std::size_t valid_ = 0;
};

// A line inside the prompt, on the grid or off it (version 4): the header's when it is one, else
// the first grid line.
std::size_t line_of(std::uint64_t line) {
  const std::size_t g = static_cast<std::size_t>(layout().grid);
  return line >= 1 && line <= prompt_len ? static_cast<std::size_t>(line) : g;
}

template <class T>
void failed_cleanly(const decode_result<T>& r) {
  if (!r.ok()) fuzz::check(!r.error.empty(), "a failed decode names its fault");
}

void decode_chunk_file(const std::vector<unsigned char>& f) {
  const auto h = read_chunk_header(f.data(), f.size());
  failed_cleanly(h);
  const std::size_t line = line_of(h.ok() ? h.value.line : 0);
  const auto r = decode_chunk(f, layout(), prompt(), line);
  failed_cleanly(r);
  if (r.ok()) {
    fuzz::check(r.value.line == line && r.value.rows.size() == layout().views.size(),
                "a chunk is its line's rows");
    const auto v = verify_chunk(f.data(), f.size(), layout(), prompt(), line);
    fuzz::check(v.ok(), "verify_chunk passes what decode_chunk passes");
  }
}

void decode_anchor_file(const std::vector<unsigned char>& f) {
  const auto h = read_anchor_header(f.data(), f.size());
  failed_cleanly(h);
  const std::size_t g = static_cast<std::size_t>(layout().grid);
  const std::size_t line = line_of(h.ok() ? h.value.line : 0);
  const auto r = decode_anchor(f, layout(), chunk_hashes(prompt(), line, g));
  failed_cleanly(r);
  if (r.ok())
    fuzz::check(r.value.line == line && r.value.sections.size() == layout().sections.size(),
                "an anchor holds every section at its line");
}

void decode_checkpoint_file(const std::vector<unsigned char>& f) {
  const auto h = read_checkpoint_header(f.data(), f.size());
  failed_cleanly(h);
  failed_cleanly(read_checkpoint_tokens(f.data(), f.size()));
  const std::size_t pt =
      h.ok() ? static_cast<std::size_t>(std::min<std::uint64_t>(h.value.prompt_tokens, prompt_len)) : 1;
  const std::vector<token_id> p(prompt().begin(), prompt().begin() + static_cast<long>(pt));
  const auto r = decode_checkpoint(f, layout(), p, h.ok() ? h.value.key_hash : 0);
  failed_cleanly(r);
  if (r.ok())
    fuzz::check(r.value.meta.tokens.size() > pt && r.value.rows.size() == layout().views.size(),
                "a checkpoint holds its prompt, a pending id and every view");
}

struct files {
  std::vector<unsigned char> chunk, anchor, tail_chunk, tail_anchor, checkpoint;
};

// The line off the grid the tail files are at (2 grid + 3: rows [2 grid, 2 grid + 3)).
std::size_t tail_line() { return 2 * static_cast<std::size_t>(layout().grid) + 3; }

// The files of a state filled from `data`: the chunk at line 8, the anchor at 8, the tail chunk
// and anchor at 11 (version 4), a checkpoint of 8 prompt ids and 3 outputs.
files encode_all(host_state& s) {
  const std::size_t g = static_cast<std::size_t>(layout().grid);
  files out;
  s.set_valid_length(tail_line());
  out.tail_chunk = encode_chunk(s, tail_line(), prompt());
  out.tail_anchor = encode_anchor(s, tail_line(), chunk_hashes(prompt(), tail_line(), g));
  s.set_valid_length(2 * g);
  out.chunk = encode_chunk(s, 2 * g, prompt());
  out.anchor = encode_anchor(s, 2 * g, chunk_hashes(prompt(), 2 * g, g));
  checkpoint_meta meta;
  meta.key_hash = 0x1234;
  meta.seed = 99;
  meta.prompt_tokens = 2 * g;
  meta.tokens.assign(prompt().begin(), prompt().begin() + static_cast<long>(2 * g + 3));
  s.set_valid_length(meta.tokens.size() - 1);
  out.checkpoint = encode_checkpoint(s, meta);
  return out;
}

void round_trip(const std::uint8_t* data, std::size_t size) {
  const std::size_t g = static_cast<std::size_t>(layout().grid);
  host_state s(layout());
  s.fill(data, size);
  const files f = encode_all(s);
  const auto c = decode_chunk(f.chunk, layout(), prompt(), 2 * g);
  fuzz::check(c.ok(), "an encoded chunk decodes");
  for (std::size_t v = 0; v < layout().views.size(); ++v)
    fuzz::check(c.value.rows[v] == s.rows(v, g, 2 * g), "a chunk's rows round-trip");
  const auto a = decode_anchor(f.anchor, layout(), chunk_hashes(prompt(), 2 * g, g));
  fuzz::check(a.ok() && a.value.sections == s.sections(), "an anchor's sections round-trip");
  const auto t = decode_chunk(f.tail_chunk, layout(), prompt(), tail_line());
  fuzz::check(t.ok() && t.value.row_count == 3, "a tail chunk decodes to its 3 rows");
  for (std::size_t v = 0; v < layout().views.size(); ++v)
    fuzz::check(t.value.rows[v] == s.rows(v, 2 * g, tail_line()), "a tail chunk's rows round-trip");
  const auto ta = decode_anchor(f.tail_anchor, layout(), chunk_hashes(prompt(), tail_line(), g));
  fuzz::check(ta.ok() && ta.value.line == tail_line() && ta.value.sections == s.sections(),
              "an anchor off the grid round-trips");
  const std::vector<token_id> p(prompt().begin(), prompt().begin() + static_cast<long>(2 * g));
  const auto k = decode_checkpoint(f.checkpoint, layout(), p, 0x1234);
  fuzz::check(k.ok() && k.value.sections == s.sections() && k.value.meta.seed == 99,
              "a checkpoint round-trips");
  for (std::size_t v = 0; v < layout().views.size(); ++v)
    fuzz::check(k.value.rows[v] == s.rows(v, 0, 2 * g + 2), "a checkpoint's rows round-trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::vector<unsigned char> file(data + 1, data + size);
  if (data[0] & 1) fuzz::reseal_header(file);
  try {
    decode_chunk_file(file);
    decode_anchor_file(file);
    decode_checkpoint_file(file);
    if (data[0] & 2) round_trip(data + 1, size - 1);
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (fuzz::seed_dir() == nullptr) return 0;
  host_state s(layout());
  const unsigned char pattern[] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89};
  s.fill(pattern, sizeof pattern);
  const files f = encode_all(s);
  fuzz::write_seed("chunk", {0}, f.chunk);
  fuzz::write_seed("anchor", {0}, f.anchor);
  fuzz::write_seed("checkpoint", {0}, f.checkpoint);
  fuzz::write_seed("tail_chunk", {0}, f.tail_chunk);
  fuzz::write_seed("tail_anchor", {0}, f.tail_anchor);
  fuzz::write_seed("round_trip", {2}, {7, 7, 7, 1, 2, 3});
  std::exit(0);
}
