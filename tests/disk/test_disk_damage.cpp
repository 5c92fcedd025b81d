// The disk tier's readers refuse damage (docs/DISK_FORMAT.md, "What a reader checks"): a
// flipped bit in any block, another prompt, another engine, a short file, a wrong line or chain.
// Every refusal names what failed and leaves a fresh engine untouched.
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/support/disk_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// A byte range of a file, what a damage there must be refused as, and a word the error names.
struct block {
  std::string name;
  std::size_t at, size;
  df::fault expect;
};

std::vector<block> chunk_blocks(const state_layout& l) {
  const std::size_t g = static_cast<std::size_t>(l.grid);
  const std::size_t hb = df::chunk_fixed_bytes + l.views.size() * df::entry_bytes;
  std::vector<block> out{{"magic", df::chunk_offset::magic, 8, df::fault::bad_magic},
                         {"version", df::chunk_offset::version, 4, df::fault::bad_version},
                         {"header", df::chunk_offset::header_crc, hb - 12, df::fault::bad_header},
                         {"tokens", hb, g * df::token_bytes, df::fault::bad_crc}};
  std::size_t at = hb + g * df::token_bytes;
  for (const auto& v : l.views) {
    out.push_back({"view " + v.name, at, g * v.bytes_per_token, df::fault::bad_crc});
    at += g * v.bytes_per_token;
  }
  REQUIRE(at == chunk_file_bytes(l));
  return out;
}

std::vector<block> anchor_blocks(const state_layout& l) {
  const std::size_t hb = df::anchor_fixed_bytes + 8 * file_lines + l.sections.size() * df::entry_bytes;
  std::vector<block> out{{"magic", df::anchor_offset::magic, 8, df::fault::bad_magic},
                         {"version", df::anchor_offset::version, 4, df::fault::bad_version},
                         {"header", df::anchor_offset::header_crc, hb - 12, df::fault::bad_header}};
  std::size_t at = hb;
  for (const auto& s : l.sections) {
    out.push_back({"section " + s.name, at, s.bytes, df::fault::bad_crc});
    at += s.bytes;
  }
  REQUIRE(at == anchor_file_bytes(l, file_lines * static_cast<std::size_t>(l.grid)));
  return out;
}

// The adapter of an engine of another build: the same bytes under another fingerprint.
class foreign_adapter : public state_adapter {
 public:
  explicit foreign_adapter(const state_adapter& inner) : inner_(inner), layout_(inner.layout()) {
    layout_.fingerprint ^= 0x5a5a;
  }
  const state_layout& layout() const override { return layout_; }
  void copy_section_out(std::size_t s, void* dst) const override { inner_.copy_section_out(s, dst); }
  void copy_section_in(std::size_t, const void*) override {}
  void copy_rows_out(std::size_t v, std::size_t a, std::size_t b, void* dst) const override {
    inner_.copy_rows_out(v, a, b, dst);
  }
  void copy_rows_in(std::size_t, std::size_t, std::size_t, const void*) override {}
  std::size_t valid_length() const override { return inner_.valid_length(); }
  void set_valid_length(std::size_t) override {}

 private:
  const state_adapter& inner_;
  state_layout layout_;
};

}  // namespace

TEST_CASE("one flipped bit anywhere in a chunk or anchor file is refused", "[format]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const damage_fixture d(preset);
  for (std::size_t file = 0; file <= file_lines; ++file) {
    const bool anchor = file == file_lines;
    for (const block& b : anchor ? anchor_blocks(d.layout) : chunk_blocks(d.layout)) {
      for (const std::size_t at : {b.at, b.at + b.size / 2, b.at + b.size - 1}) {
        for (const int bit : {0, 5, 7}) {
          INFO((anchor ? "anchor" : "chunk " + std::to_string(file)) << ", " << b.name << ", byte " << at);
          disk_files f = d.files;
          (anchor ? f.anchor : f.chunks[file])[at] ^= static_cast<unsigned char>(1u << bit);
          d.refused(f, b.expect, b.name == "magic" ? "not a" : b.name);
        }
      }
    }
  }
}

TEST_CASE("a chunk of another prompt is refused token by token", "[format]") {
  const damage_fixture d("tiny");
  SECTION("a wrong token id in the prompt inside a chunk") {
    auto other = d.prompt;
    other[d.g + 8] ^= 1;  // inside chunk 2's rows
    const auto other_hashes = chunk_hashes(other, file_lines * d.g, d.g);
    d.refused(d.files, df::fault::wrong_prefix, "token at position " + std::to_string(d.g + 8), &other,
              &other_hashes);
  }
  SECTION("a wrong token id below a chunk: its prefix hash") {
    auto other = d.prompt;
    other[5] ^= 1;
    const auto r = decode_chunk(d.files.chunks[2], d.layout, other, file_lines * d.g);
    CHECK(r.fault == df::fault::wrong_prefix);
    CHECK_THAT(r.error, Catch::Contains("prefix hash"));
  }
  SECTION("stored ids rewritten under valid crcs: the ids themselves are compared") {
    disk_files f = d.files;
    bytes& chunk = f.chunks[0];
    const std::size_t hb = df::chunk_fixed_bytes + d.layout.views.size() * df::entry_bytes;
    chunk[hb + 4 * 5] ^= 1;
    put32(chunk, df::chunk_offset::tokens_crc, crc32(chunk.data() + hb, d.g * df::token_bytes));
    reseal_header(chunk, hb);
    d.refused(f, df::fault::wrong_prefix, "token at position 5");
  }
}

TEST_CASE("files of another engine, length, line or chain are refused", "[format]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const damage_fixture d(preset);
  const std::size_t g = d.g;
  SECTION("a foreign fingerprint") {
    auto writer = make_engine(d.c);
    writer->prefill(slice(d.prompt, 0, file_lines * g));
    const foreign_adapter foreign(writer->cache_state());
    disk_files f = d.files;
    f.chunks[1] = encode_chunk(foreign, 2 * g, d.prompt);
    d.refused(f, df::fault::foreign_engine, "fingerprint");
    f = d.files;
    f.anchor = encode_anchor(foreign, file_lines * g, d.hashes);
    d.refused(f, df::fault::foreign_engine, "fingerprint");
  }
  SECTION("truncated files") {
    for (const std::size_t keep : {std::size_t{0}, std::size_t{40}, std::size_t{100},
                                   d.files.chunks[0].size() / 2, d.files.chunks[0].size() - 1}) {
      INFO("kept " << keep);
      disk_files f = d.files;
      f.chunks[0].resize(keep);
      d.refused(f, df::fault::truncated, "bytes");
      f = d.files;
      f.anchor.resize(std::min(keep, f.anchor.size() - 1));
      d.refused(f, df::fault::truncated, "bytes");
    }
    disk_files f = d.files;
    f.chunks[2].push_back(0);
    d.refused(f, df::fault::bad_header, "the header says");
  }
  SECTION("a wrong line") {
    disk_files f = d.files;
    std::swap(f.chunks[0], f.chunks[1]);
    d.refused(f, df::fault::wrong_line, "asked for line " + std::to_string(g));
    const std::vector<std::uint64_t> two(d.hashes.begin(), d.hashes.begin() + 2);
    const auto r = decode_anchor(d.files.anchor, d.layout, two);
    CHECK(r.fault == df::fault::wrong_line);
    CHECK_THAT(r.error, Catch::Contains("the anchor at line " + std::to_string(3 * g) +
                                        " stands on 3 chunks, asked for 2"));
  }
  SECTION("a chunk hash list that does not match") {
    auto wrong = d.hashes;
    wrong[1] ^= 1;
    d.refused(d.files, df::fault::wrong_chunks, "chunk hash 1", nullptr, &wrong);
  }
  SECTION("the other kind of file") {
    disk_files f = d.files;
    f.chunks[2] = d.files.anchor;
    d.refused(f, df::fault::bad_magic, "not a chunk file (an anchor file)");
  }
}
