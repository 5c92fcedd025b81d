#pragma once
// Helpers for the disk format tests: a writer's chunk and anchor files, a restore that decodes
// every file before it applies any, and damage checks against a fresh engine.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "protocol/disk_format.hpp"
#include "runtime/core/crc32.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"

namespace anchorage::testing {

namespace df = anchorage::disk_format;
using bytes = std::vector<unsigned char>;

// The files cover lines 1..3 (rows [0, 3 grid)); the anchor sits at line 3.
inline constexpr std::size_t file_lines = 3;

struct disk_files {
  std::vector<bytes> chunks;  // chunks[i] holds rows [i grid, (i + 1) grid)
  bytes anchor;
};

inline disk_files write_files(const engine& e, const std::vector<token_id>& prompt) {
  const std::size_t g = static_cast<std::size_t>(e.config().grid);
  disk_files f;
  for (std::size_t i = 1; i <= file_lines; ++i)
    f.chunks.push_back(encode_chunk(e.cache_state(), i * g, prompt));
  f.anchor = encode_anchor(e.cache_state(), file_lines * g, chunk_hashes(prompt, file_lines * g, g));
  return f;
}

// What a restore does: decode every file, then apply them all, or nothing when one fails.
inline std::pair<df::fault, std::string> restore(engine& e, const disk_files& f,
                                                 const std::vector<token_id>& prompt,
                                                 const std::vector<std::uint64_t>& expected) {
  const state_layout& l = e.layout();
  const std::size_t g = static_cast<std::size_t>(l.grid);
  std::vector<chunk_read> reads;
  for (std::size_t i = 0; i < f.chunks.size(); ++i) {
    auto r = decode_chunk(f.chunks[i], l, prompt, (i + 1) * g);
    if (!r.ok()) return {r.fault, r.error};
    reads.push_back(std::move(r.value));
  }
  auto a = decode_anchor(f.anchor, l, expected);
  if (!a.ok()) return {a.fault, a.error};
  for (const auto& r : reads) apply_chunk(e.cache_state(), r);
  apply_anchor(e.cache_state(), a.value, expected.size() * g);
  return {df::fault::none, {}};
}

// Every section and rows [0, n) of every view, whatever the valid length.
inline snapshot state_bytes(const state_adapter& s, std::size_t n) {
  snapshot out;
  out.length = n;
  const auto& l = s.layout();
  for (std::size_t i = 0; i < l.sections.size(); ++i) {
    out.sections.emplace_back(l.sections[i].bytes);
    s.copy_section_out(i, out.sections.back().data());
  }
  for (std::size_t i = 0; i < l.views.size(); ++i) {
    out.views.emplace_back(l.views[i].bytes_per_token * n);
    s.copy_rows_out(i, 0, n, out.views.back().data());
  }
  return out;
}

// Two engines at the same length with the same rows and sections, bit for bit (checked).
inline void check_same_state(engine& a, engine& b) {
  const std::size_t n = b.length();
  REQUIRE(a.length() == n);
  const snapshot x = state_bytes(a.cache_state(), n), y = state_bytes(b.cache_state(), n);
  CHECK(x.views == y.views);
  CHECK(x.sections == y.sections);
}

inline void put32(bytes& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void put64(bytes& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void reseal_header(bytes& f, std::size_t header_bytes) {
  put32(f, 12, crc32(f.data() + 16, header_bytes - 16));
}

// A writer's files at line 3 of a prompt, and a check that a restore from damaged ones is
// refused with the expected fault, names what failed, and leaves a fresh engine untouched.
struct damage_fixture {
  model_config c;
  std::size_t g;
  std::vector<token_id> prompt;
  disk_files files;
  state_layout layout;
  std::vector<std::uint64_t> hashes;

  explicit damage_fixture(const std::string& preset)
      : c(test_config(preset)), g(static_cast<std::size_t>(c.grid)), prompt(test_tokens(4 * g)) {
    auto writer = make_engine(c);
    writer->prefill(slice(prompt, 0, file_lines * g));
    files = write_files(*writer, prompt);
    layout = writer->layout();
    hashes = chunk_hashes(prompt, file_lines * g, g);
  }

  void refused(const disk_files& f, df::fault expect, const std::string& word,
               const std::vector<token_id>* other_prompt = nullptr,
               const std::vector<std::uint64_t>* other_hashes = nullptr) const {
    auto fresh = make_engine(c);
    const snapshot before = state_bytes(fresh->cache_state(), file_lines * g);
    const auto r =
        restore(*fresh, f, other_prompt ? *other_prompt : prompt, other_hashes ? *other_hashes : hashes);
    INFO("error: " << r.second);
    CHECK(r.first == expect);
    CHECK_THAT(r.second, Catch::Contains(word));
    CHECK_THAT(r.second, Catch::StartsWith(df::fault_name(expect)));
    CHECK(fresh->length() == 0);
    require_same_state(state_bytes(fresh->cache_state(), file_lines * g), before, layout);
  }
};

}  // namespace anchorage::testing
