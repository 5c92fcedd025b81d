#pragma once
// Helpers for the durable prefix store's tests (tests/disk/test_disk_store*.cpp): the tiny preset on a
// fresh directory behind a fault_env over a uring_env, file names as the store spells them, the
// files on disk, and byte-for-byte comparisons with a cold prefill.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/disk/disk_store.hpp"
#include "tests/support/fault_env.hpp"
#include "runtime/io/uring_env.hpp"
#include "tests/support/disk_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace anchorage::testing {

namespace fs = std::filesystem;

inline constexpr std::int64_t day = 24 * 3600;

inline std::string hex16(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// A generous budget and no free-space floor unless a test sets them.
inline disk_store_options options_in(const std::string& dir, std::uint64_t budget = 1ULL << 32,
                                     std::uint64_t entry_max = 0) {
  disk_store_options o;
  o.dir = dir;
  o.eviction.budget_bytes = budget;
  o.eviction.min_free_bytes = 0;
  o.entry_max_bytes = entry_max;
  return o;
}

// Regular files under `dir` (recursive), relative paths, sorted; tmp files included.
inline std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) out.push_back(it->path().lexically_relative(dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<std::string> tmp_files_under(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : files_under(dir))
    if (is_tmp_name(f)) out.push_back(f);
  return out;
}

// Bytes of every finished (non-tmp) file under `dir`: what the index must account for.
inline std::uint64_t bytes_under(const std::string& dir) {
  std::uint64_t n = 0;
  for (const auto& f : files_under(dir))
    if (!is_tmp_name(f)) n += fs::file_size(fs::path(dir) / f);
  return n;
}

inline std::size_t count_files(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& f : files_under(dir))
    if (!is_tmp_name(f)) ++n;
  return n;
}

inline bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

inline std::string chunk_file(const disk_store& s, const std::vector<token_id>& t, std::size_t line) {
  return join_path(s.folder(), "c-" + hex16(prefix_hash(t.data(), line)) + ".chk");
}

inline std::string anchor_file(const disk_store& s, const std::string& ns, const std::vector<token_id>& t,
                               std::size_t line) {
  return join_path(join_path(s.folder(), "n-" + (ns.empty() ? std::string("_") : ns)),
                   "a-" + hex16(prefix_hash(t.data(), line)) + ".anc");
}

inline std::unique_ptr<engine> prefilled(const model_config& c, const std::vector<token_id>& t,
                                         std::size_t n) {
  auto e = make_engine(c);
  e->prefill(slice(t, 0, n));
  return e;
}

// `a` holds exactly what a cold prefill `cold` of the same n tokens holds.
inline void require_same_as_cold(const engine& a, const engine& cold, std::size_t n) {
  REQUIRE(a.length() == n);
  REQUIRE(cold.length() == n);
  require_same_state(state_bytes(a.cache_state(), n), state_bytes(cold.cache_state(), n), a.layout());
}

// A write of the state `e` holds at its length `line` (sections there, rows [0, line)) as an
// anchor of `ns` for tokens[0, line), every chunk below it listed.
inline staged_write stage(const engine& e, const std::vector<token_id>& tokens, const std::string& ns,
                          bool supersede) {
  const state_layout& l = e.layout();
  const std::size_t g = static_cast<std::size_t>(l.grid);
  const std::size_t line = e.length();
  REQUIRE(line % g == 0);
  staged_write w;
  w.tokens = slice(tokens, 0, line);
  w.ns = ns;
  for (std::size_t b = g; b <= line; b += g) w.chunks.push_back(b);
  staged_anchor a;
  a.line = line;
  for (std::size_t i = 0; i < l.sections.size(); ++i) {
    a.sections.emplace_back(l.sections[i].bytes);
    e.cache_state().copy_section_out(i, a.sections.back().data());
  }
  w.anchors.push_back(std::move(a));
  w.row_lo = 0;
  w.row_hi = line;
  for (std::size_t v = 0; v < l.views.size(); ++v) {
    w.rows.emplace_back(l.views[v].bytes_per_token * line);
    e.cache_state().copy_rows_out(v, 0, line, w.rows.back().data());
  }
  w.supersede = supersede;
  return w;
}

// What every test needs: the tiny preset (grid 32), its layout and file sizes, a manual clock
// started at the real time (scan reads last use from the files' mtimes), and a fault_env over a
// uring_env on a fresh directory.
struct bench {
  temp_dir dir{"anchorage-disk-store"};
  model_config c = test_config("tiny");
  std::size_t g = static_cast<std::size_t>(c.grid);
  state_layout layout = make_engine(c)->layout();
  std::size_t cfb = chunk_file_bytes(layout);
  manual_clock clock{static_cast<std::int64_t>(std::time(nullptr))};
  uring_env base;
  fault_env env{base};

  std::size_t afb(std::size_t line) const { return anchor_file_bytes(layout, line); }
  // The bytes of one entry at `line` with none of its chunks present.
  std::uint64_t entry_bytes(std::size_t line) const { return (line / g) * cfb + afb(line); }

  std::unique_ptr<disk_store> open(file_env& e, disk_store_options o) {
    auto s = std::make_unique<disk_store>(e, layout, clock, std::move(o));
    s->scan();
    return s;
  }
  std::unique_ptr<disk_store> open(disk_store_options o) { return open(env, std::move(o)); }
  std::unique_ptr<disk_store> open() { return open(options_in(dir.str())); }
  std::string folder() const { return join_path(dir.str(), hex16(layout.fingerprint)); }
};

// A failed restore must leave `e` exactly as it was: length and every byte up to `rows`.
struct untouched {
  const engine& e;
  std::size_t rows;
  std::size_t length;
  snapshot before;
  untouched(const engine& e_, std::size_t rows_)
      : e(e_), rows(rows_), length(e_.length()), before(state_bytes(e_.cache_state(), rows_)) {}
  void check() const {
    CHECK(e.length() == length);
    require_same_state(state_bytes(e.cache_state(), rows), before, e.layout());
  }
};

inline long counter(const nlohmann::json& stats, const char* name) {
  INFO("stats: " << stats.dump());
  REQUIRE(stats.contains(name));
  REQUIRE(stats.at(name).is_number_integer());
  return stats.at(name).get<long>();
}

}  // namespace anchorage::testing
