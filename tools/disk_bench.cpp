// Write and read bandwidth of the disk tier against plain O_DIRECT, in the same run, printed as
// one JSON object with the ratios (the disk tier's goal is >= 0.9). Two comparisons:
//
// seam: files through uring_env (write_atomic, then read back) against a plain O_DIRECT
//   sequential write and read of the same bytes with pwrite/pread in 4 MiB blocks. The two are
//   interleaved file by file, alternating which goes first, so drift on a shared machine falls
//   on both. Both sides fsync each file; write_atomic also renames and syncs the directory.
//
// tier: the disk store's own paths at two sizes of state. "seed" is a synthetic layout of the
//   seed's sizes (chunk files of 104 MiB: two views of 52 KiB a token on a grid of 1024; anchor
//   files of 147 MiB of sections); "small" is the `small` preset's layout (3 MiB chunks, 1.3 MB
//   anchors), taken from an engine built with a short context. One repetition writes N chunks
//   and one anchor at line N * grid:
//     tier write = disk_store::write() of a staged write (rows and sections of random bytes):
//                  the plan, the encoding (crc32 of every block), write_atomic of every file
//                  (tmp, fsync, rename, directory fsync) and the indexing;
//     tier read  = disk_store::find_exact() and restore() into a host-memory state: reading
//                  every file through uring_env, verifying the tokens and every crc, applying;
//     raw        = the same number of files of the same sizes written (pwrite, fsync) and read
//                  (pread) with O_DIRECT.
//   Each repetition uses other token ids, so every file is new; tier and raw alternate which
//   goes first. The restored state is compared with what was staged (outside the timings), and
//   the store is cleared between repetitions (outside the timings). "in_memory" splits out the
//   CPU part: one repetition's files encoded, then decoded and applied, with no file at all,
//   and crc32 alone over the same bytes.
//
// The page cache is not dropped (that needs root): O_DIRECT keeps both sides off it. uring_env
// opens with O_DIRECT and falls back to buffered I/O only where the file system refuses it;
// "o_direct_accepted" says whether this directory's file system accepts it (then the tier's
// reads and writes were O_DIRECT too).
//
// Usage: anchorage-bench-disk [--dir /tmp/anchorage-bench-disk] [--size-mb 104] [--files 4]
//                             [--tier-chunks 4] [--small-chunks 16] [--tier-reps 3]
//                             [--sizes seed,small]
// --tier-chunks is N for the seed's size, --small-chunks for `small` (16: what a 16k-token
// system prompt writes). --files 0 skips the seam comparison; --sizes "" skips the tier's.
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/core/crc32.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/disk/disk_store.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/disk/staged_state.hpp"
#include "runtime/io/uring_env.hpp"
#include "tools/bench_common.hpp"
#include "tools/disk_bench_raw.hpp"

using namespace anchorage;

namespace {

using clock_type = std::chrono::steady_clock;
using bench::seconds_since;
using namespace anchorage::raw_io;
[[noreturn]] void die(const std::string& what) {
  std::cerr << "anchorage-bench-disk: " << what << "\n";
  std::exit(1);
}

// ---- The seam: uring_env's files against raw O_DIRECT -----------------------------------------

nlohmann::json seam_bench(uring_env& env, const std::string& dir, std::size_t size_mb, std::size_t files) {
  const std::size_t n = size_mb << 20;
  const std::size_t padded = round_up(n);
  const auto free = env.free_bytes(dir);
  if (!free || *free < 2 * files * padded + (256u << 20)) die("not enough free space in " + dir);

  // The bytes: one pseudo-random buffer, aligned so the baseline can write it directly.
  aligned_bytes src = aligned_alloc_bytes(padded), dst = aligned_alloc_bytes(padded);
  if (!src || !dst) die("out of memory");
  fill_random(src.get(), padded, 0x2545F4914F6CDD1DULL);

  double env_write_s = 0, env_read_s = 0, raw_write_s = 0, raw_read_s = 0;
  bool verified = true;
  auto env_name = [](std::size_t i) { return "env-" + std::to_string(i); };
  auto raw_path = [&](std::size_t i) { return join_path(dir, "raw-" + std::to_string(i)); };

  for (std::size_t i = 0; i < files; ++i) {
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == (i % 2 == 0)) {
        const auto t0 = clock_type::now();
        if (auto r = env.write_atomic(dir, env_name(i), {{src.get(), n}}); !r) die(r.message);
        env_write_s += seconds_since(t0);
      } else {
        const auto t0 = clock_type::now();
        if (!raw_write(raw_path(i), src.get(), n)) die("raw write failed: " + raw_path(i));
        raw_write_s += seconds_since(t0);
      }
    }
  }
  for (std::size_t i = 0; i < files; ++i) {
    for (int side = 0; side < 2; ++side) {
      std::memset(dst.get(), 0, n);
      if ((side == 0) == (i % 2 == 0)) {
        const auto t0 = clock_type::now();
        if (auto r = env.read(join_path(dir, env_name(i)), 0, dst.get(), n); !r) die(r.message);
        env_read_s += seconds_since(t0);
      } else {
        const auto t0 = clock_type::now();
        if (!raw_read(raw_path(i), dst.get(), n)) die("raw read failed: " + raw_path(i));
        raw_read_s += seconds_since(t0);
      }
      verified = verified && std::memcmp(dst.get(), src.get(), n) == 0;
    }
  }
  for (std::size_t i = 0; i < files; ++i) {
    env.remove(join_path(dir, env_name(i)));
    env.remove(raw_path(i));
  }

  const double bytes = static_cast<double>(n) * static_cast<double>(files);
  auto gbps = [&](double s) { return s > 0 ? bytes / s / 1e9 : 0.0; };
  return {
      {"size_mb", size_mb},
      {"files", files},
      {"verified", verified},
      {"uring_env", {{"write_gbps", gbps(env_write_s)}, {"read_gbps", gbps(env_read_s)}}},
      {"raw_o_direct", {{"write_gbps", gbps(raw_write_s)}, {"read_gbps", gbps(raw_read_s)}}},
      {"ratio",
       {{"write", env_write_s > 0 ? raw_write_s / env_write_s : 0.0},
        {"read", env_read_s > 0 ? raw_read_s / env_read_s : 0.0}}},
  };
}

// ---- The tier: disk_store's write and restore against raw O_DIRECT -----------------------------

// A state held in host vectors: what a restore writes into (an engine's cache_state() stands
// here in the server). Every buffer is allocated and zeroed up front, so a restore pays for
// copies, not page faults.
class host_state final : public state_adapter {
 public:
  explicit host_state(const state_layout& layout) : layout_(layout) {
    for (const auto& s : layout_.sections) sections_.emplace_back(s.bytes);
    for (const auto& v : layout_.views) views_.emplace_back(v.capacity * v.bytes_per_token);
  }

  const state_layout& layout() const override { return layout_; }
  void copy_section_out(std::size_t s, void* dst) const override {
    std::memcpy(dst, sections_.at(s).data(), sections_[s].size());
  }
  void copy_section_in(std::size_t s, const void* src) override {
    std::memcpy(sections_.at(s).data(), src, sections_[s].size());
  }
  void copy_rows_out(std::size_t v, std::size_t a, std::size_t b, void* dst) const override {
    check(v, a, b);
    const std::size_t bpt = layout_.views[v].bytes_per_token;
    std::memcpy(dst, views_[v].data() + a * bpt, (b - a) * bpt);
  }
  void copy_rows_in(std::size_t v, std::size_t a, std::size_t b, const void* src) override {
    check(v, a, b);
    const std::size_t bpt = layout_.views[v].bytes_per_token;
    std::memcpy(views_[v].data() + a * bpt, src, (b - a) * bpt);
  }
  std::size_t valid_length() const override { return length_; }
  void set_valid_length(std::size_t n) override { length_ = n; }

  const std::vector<unsigned char>& section(std::size_t s) const { return sections_[s]; }
  const std::vector<unsigned char>& view(std::size_t v) const { return views_[v]; }

 private:
  void check(std::size_t v, std::size_t a, std::size_t b) const {
    if (v >= views_.size() || a > b || b > layout_.views[v].capacity)
      throw std::out_of_range("host_state: rows out of range");
  }
  state_layout layout_;
  std::vector<std::vector<unsigned char>> sections_, views_;
  std::size_t length_ = 0;
};

// The seed's sizes: a chunk file of 104 MiB (106,496 bytes a token on a grid of 1024, in two
// views) and an anchor file of 147 MiB of sections. Names as the engine's; the fingerprint is
// any constant (the store only compares it with its own).
state_layout seed_layout(std::size_t rows) {
  state_layout l;
  l.grid = 1024;
  l.views = {{"K", 53248, rows}, {"V", 53248, rows}};
  l.sections = {{"gdn.S", 144u << 20}, {"gdn.conv", 3u << 20}};
  l.fingerprint = 0x5eed5eed5eed5eedULL;
  return l;
}

// The `small` preset's layout and fingerprint, from an engine built with a context of `rows`
// (the layout's names and sizes do not depend on the context; the capacities do).
state_layout small_layout(std::size_t rows) {
  model_config c = preset_config("small");
  c.ctx_size = static_cast<int>(std::max<std::size_t>(rows, static_cast<std::size_t>(c.grid)));
  const engine e(c, random_weights(c, 1));
  state_layout l = e.layout();
  for (auto& v : l.views) v.capacity = rows;
  return l;
}

struct timed {
  double tier_s = 0, raw_s = 0;
};

nlohmann::json side_json(double bytes, double s) {
  return {{"seconds", s}, {"gbps", s > 0 ? bytes / s / 1e9 : 0.0}};
}

nlohmann::json tier_bench(const std::string& size_name, const std::string& root, std::size_t chunks,
                          std::size_t reps) {
  const std::size_t rows_needed = chunks * 1024;  // both layouts have a grid of 1024
  const state_layout layout = size_name == "seed" ? seed_layout(rows_needed) : small_layout(rows_needed);
  const std::size_t grid = static_cast<std::size_t>(layout.grid);
  const std::size_t line = chunks * grid;
  if (layout.views.empty() || layout.views[0].capacity < line)
    die("layout capacity below " + std::to_string(line));

  const std::string dir = join_path(root, "tier-" + size_name);
  uring_env env;
  if (auto r = env.make_dir(dir); !r) die(r.message);
  const std::size_t chunk_bytes = chunk_file_bytes(layout);
  const std::size_t anchor_bytes = anchor_file_bytes(layout, line);
  const std::size_t rep_bytes = chunks * chunk_bytes + anchor_bytes;
  const auto free = env.free_bytes(dir);
  if (!free || *free < 2 * rep_bytes + (4ULL << 30) + (256u << 20)) die("not enough free space in " + dir);

  // The staged write: random rows and sections, filled once; each repetition changes the ids.
  staged_write w;
  w.ns = "";
  for (std::size_t b = grid; b <= line; b += grid) w.chunks.push_back(b);
  w.row_lo = 0;
  w.row_hi = line;
  std::uint64_t seed = 0x9e3779b97f4a7c15ULL;
  for (const auto& v : layout.views) {
    w.rows.emplace_back(line * v.bytes_per_token);
    fill_random(w.rows.back().data(), w.rows.back().size(), ++seed);
  }
  staged_anchor a;
  a.line = line;
  for (const auto& s : layout.sections) {
    a.sections.emplace_back(s.bytes);
    fill_random(a.sections.back().data(), s.bytes, ++seed);
  }
  w.anchors.push_back(std::move(a));

  // The baseline's bytes: one aligned buffer as large as the larger file.
  const std::size_t raw_max = round_up(std::max(chunk_bytes, anchor_bytes));
  aligned_bytes src = aligned_alloc_bytes(raw_max), dst = aligned_alloc_bytes(raw_max);
  if (!src || !dst) die("out of memory");
  fill_random(src.get(), raw_max, ++seed);
  std::vector<std::size_t> raw_sizes(chunks, chunk_bytes);
  raw_sizes.push_back(anchor_bytes);
  auto raw_path = [&](std::size_t i) { return join_path(dir, "raw-" + std::to_string(i)); };

  system_eviction_clock clock;
  disk_store_options so;
  so.dir = dir;
  disk_store store(env, layout, clock, so);
  store.scan();
  host_state into(layout);

  timed write, read;
  bool verified = true;
  std::uint64_t tier_written = 0, tier_read = 0;
  nlohmann::json per_rep = nlohmann::json::array();
  for (std::size_t r = 0; r < reps; ++r) {
    w.tokens = bench::prose(line, 1000 + r + (size_name == "seed" ? 0 : 500));
    const bool tier_first = r % 2 == 0;
    double tw = 0, rw = 0, tr = 0, rr = 0;
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == tier_first) {
        const auto t0 = clock_type::now();
        const disk_write_report rep = store.write(w);
        tw = seconds_since(t0);
        if (rep.refused || rep.failed || rep.chunks_written != chunks || rep.anchors_written != 1)
          die("tier write: " + std::to_string(rep.chunks_written) + " chunks, " +
              std::to_string(rep.anchors_written) + " anchors written; " + rep.error);
        tier_written += rep.bytes_written;
      } else {
        const auto t0 = clock_type::now();
        for (std::size_t i = 0; i < raw_sizes.size(); ++i)
          if (!raw_write(raw_path(i), src.get(), raw_sizes[i])) die("raw write failed: " + raw_path(i));
        rw = seconds_since(t0);
      }
    }
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == tier_first) {
        into.set_valid_length(0);
        const auto t0 = clock_type::now();
        const auto hit = store.find_exact(w.tokens);
        if (!hit) die("tier read: the anchor at " + std::to_string(line) + " is not indexed");
        const auto res = store.restore(*hit, w.tokens, into);
        tr = seconds_since(t0);
        if (!res) die("tier read: " + res.error().error());
        tier_read += res->bytes_read;
      } else {
        const auto t0 = clock_type::now();
        for (std::size_t i = 0; i < raw_sizes.size(); ++i)
          if (!raw_read(raw_path(i), dst.get(), raw_sizes[i])) die("raw read failed: " + raw_path(i));
        rr = seconds_since(t0);
        verified = verified && std::memcmp(dst.get(), src.get(), raw_sizes.back()) == 0;
      }
    }
    // What the restore wrote is what was staged.
    verified = verified && into.valid_length() == line;
    for (std::size_t v = 0; v < layout.views.size(); ++v)
      verified = verified && std::memcmp(into.view(v).data(), w.rows[v].data(), w.rows[v].size()) == 0;
    for (std::size_t s = 0; s < layout.sections.size(); ++s)
      verified = verified && into.section(s) == w.anchors[0].sections[s];
    store.clear();
    for (std::size_t i = 0; i < raw_sizes.size(); ++i) env.remove(raw_path(i));
    write.tier_s += tw, write.raw_s += rw, read.tier_s += tr, read.raw_s += rr;
    per_rep.push_back({{"tier_first", tier_first},
                       {"write_ratio", tw > 0 ? rw / tw : 0.0},
                       {"read_ratio", tr > 0 ? rr / tr : 0.0},
                       {"tier_write_s", tw},
                       {"raw_write_s", rw},
                       {"tier_read_s", tr},
                       {"raw_read_s", rr}});
  }
  // The CPU part, in memory and without files: encoding every file of one repetition (what
  // the tier's write does before write_atomic), then decoding and applying them (what its
  // restore does after the reads).
  double encode_s = 0, decode_s = 0;
  {
    std::vector<std::vector<unsigned char>> encoded;
    auto t0 = clock_type::now();
    for (std::size_t b = grid; b <= line; b += grid)
      encoded.push_back(encode_chunk(staged_state(layout, w), b, w.tokens));
    const std::vector<std::uint64_t> chain = chunk_hashes(w.tokens, line, grid);
    encoded.push_back(encode_anchor(staged_state(layout, w, &w.anchors[0]), line, chain));
    encode_s = seconds_since(t0);
    into.set_valid_length(0);
    t0 = clock_type::now();
    for (std::size_t i = 0; i < chunks; ++i) {
      const auto d = decode_chunk(encoded[i], layout, w.tokens, (i + 1) * grid);
      if (!d.ok()) die("decode: " + d.error);
      apply_chunk(into, d.value);
    }
    const auto d = decode_anchor(encoded.back(), layout, chain);
    if (!d.ok()) die("decode: " + d.error);
    apply_anchor(into, d.value, line);
    decode_s = seconds_since(t0);
  }
  // crc32 alone over the same bytes: the part of encode and decode that is checksumming.
  double crc_s = 0;
  {
    std::uint32_t sink = 0;
    const auto t0 = clock_type::now();
    for (const auto& r : w.rows) sink ^= crc32(r.data(), r.size());
    for (const auto& sec : w.anchors[0].sections) sink ^= crc32(sec.data(), sec.size());
    crc_s = seconds_since(t0);
    if (sink == 0x12345678u) std::cerr << "";  // keeps the loop
  }

  // The store's folders, now empty (only when empty: nothing else is removed).
  ::rmdir(join_path(store.folder(), "n-_").c_str());
  ::rmdir(store.folder().c_str());
  ::rmdir(dir.c_str());

  const double raw_bytes = static_cast<double>(rep_bytes) * static_cast<double>(reps);
  return {
      {"size", size_name},
      {"layout", layout.describe()},
      {"chunks", chunks},
      {"chunk_file_bytes", chunk_bytes},
      {"anchor_file_bytes", anchor_bytes},
      {"files_per_rep", chunks + 1},
      {"bytes_per_rep", rep_bytes},
      {"verified", verified},
      {"tier",
       {{"write", side_json(static_cast<double>(tier_written), write.tier_s)},
        {"read", side_json(static_cast<double>(tier_read), read.tier_s)},
        {"bytes_written", tier_written},
        {"bytes_read", tier_read}}},
      {"raw_o_direct",
       {{"write", side_json(raw_bytes, write.raw_s)},
        {"read", side_json(raw_bytes, read.raw_s)},
        {"bytes", static_cast<std::uint64_t>(raw_bytes)}}},
      // Tier GB/s over raw GB/s (the bytes are equal, so raw seconds over tier seconds).
      {"ratio",
       {{"write", write.tier_s > 0 ? write.raw_s / write.tier_s : 0.0},
        {"read", read.tier_s > 0 ? read.raw_s / read.tier_s : 0.0}}},
      {"per_rep", per_rep},
      // One repetition's files encoded, then decoded and applied, in memory (no I/O).
      {"in_memory",
       {{"encode", side_json(static_cast<double>(rep_bytes), encode_s)},
        {"decode_apply", side_json(static_cast<double>(rep_bytes), decode_s)},
        {"crc32", side_json(static_cast<double>(rep_bytes), crc_s)}}},
  };
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp/anchorage-bench-disk";
  std::size_t size_mb = 104;
  std::size_t files = 4;
  std::size_t tier_chunks = 4;
  std::size_t small_chunks = 16;
  std::size_t tier_reps = 3;
  std::vector<std::string> sizes = {"seed", "small"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) die("missing value for " + a);
    if (a == "--dir")
      dir = argv[++i];
    else if (a == "--size-mb")
      size_mb = std::stoul(argv[++i]);
    else if (a == "--files")
      files = std::stoul(argv[++i]);
    else if (a == "--tier-chunks")
      tier_chunks = std::stoul(argv[++i]);
    else if (a == "--small-chunks")
      small_chunks = std::stoul(argv[++i]);
    else if (a == "--tier-reps")
      tier_reps = std::stoul(argv[++i]);
    else if (a == "--sizes")
      sizes = split(argv[++i]);
    else
      die("unknown flag " + a +
          " (flags: --dir --size-mb --files --tier-chunks --small-chunks --tier-reps --sizes)");
  }
  if (files > 0 && size_mb == 0) die("--size-mb must be positive");
  if (tier_chunks == 0 || small_chunks == 0 || tier_reps == 0)
    die("--tier-chunks, --small-chunks and --tier-reps must be positive");
  for (const auto& s : sizes)
    if (s != "seed" && s != "small") die("unknown size " + s + " (sizes: seed, small)");

  uring_env env;
  if (auto r = env.make_dir(dir); !r) die(r.message);
  nlohmann::json out = {
      {"dir", dir},
      {"uses_uring", env.uses_uring()},
      {"o_direct_accepted", o_direct_accepted(dir)},
  };
  bool verified = true;
  if (files > 0) {
    out["seam"] = seam_bench(env, dir, size_mb, files);
    verified = verified && out["seam"]["verified"].get<bool>();
  }
  if (!sizes.empty()) {
    nlohmann::json tier = {{"reps", tier_reps},
                           {"tier_io_o_direct", out["o_direct_accepted"]},
                           {"sizes", nlohmann::json::array()}};
    for (const auto& s : sizes) {
      tier["sizes"].push_back(tier_bench(s, dir, s == "seed" ? tier_chunks : small_chunks, tier_reps));
      verified = verified && tier["sizes"].back()["verified"].get<bool>();
    }
    out["tier"] = std::move(tier);
  }
  ::rmdir(dir.c_str());  // only when empty; a directory the caller filled stays
  std::cout << out.dump(2) << std::endl;
  return verified ? 0 : 1;
}
