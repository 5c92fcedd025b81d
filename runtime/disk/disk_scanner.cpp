#include "runtime/disk/disk_scanner.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "protocol/checkpoint_format.hpp"
#include "protocol/disk_format.hpp"
#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/store/record_file.hpp"

namespace anchorage {
namespace {

namespace df = disk_format;

// A header larger than this is damage, not a file of ours (128k rows on a grid of 1 is 1 MiB).
constexpr std::uint64_t max_header_bytes = 64ULL << 20;

}  // namespace

disk_scanner::verdict disk_scanner::check_chunk(const std::string& path, std::uint64_t hash,
                                                df::chunk_header& out) {
  auto bytes = store::read_record_header(env_, path, df::chunk_fixed_bytes, max_header_bytes);
  auto h = bytes ? read_chunk_header(bytes->data(), bytes->size())
                 : decode_result<df::chunk_header>::failure(df::fault::truncated, "header");
  if (h.ok() && (h.value.fingerprint != layout_.fingerprint || h.value.grid != grid_))
    return verdict::foreign;
  // A line off the grid is version 4's (read_chunk_header checked it) and holds fewer rows.
  if (!h.ok() || h.value.prefix_hash != hash || env_.size(path) != h.value.file_bytes || h.value.line == 0 ||
      h.value.file_bytes != chunk_file_bytes(layout_, h.value.line))
    return verdict::damaged;
  out = std::move(h.value);
  return verdict::ok;
}

disk_scanner::verdict disk_scanner::check_anchor(const std::string& path, std::uint64_t key,
                                                 df::anchor_header& out) {
  auto bytes = store::read_record_header(env_, path, df::anchor_fixed_bytes, max_header_bytes);
  auto h = bytes ? read_anchor_header(bytes->data(), bytes->size())
                 : decode_result<df::anchor_header>::failure(df::fault::truncated, "header");
  if (h.ok() && (h.value.fingerprint != layout_.fingerprint || h.value.grid != grid_))
    return verdict::foreign;
  if (!h.ok() || h.value.chunk_hashes.empty() || h.value.chunk_hashes.back() != key ||
      env_.size(path) != h.value.file_bytes ||
      h.value.chunk_hashes.size() != df::chain_length(h.value.line, grid_))
    return verdict::damaged;
  out = std::move(h.value);
  return verdict::ok;
}

disk_scanner::disk_scanner(file_env& env, const state_layout& layout, const disk_names& names)
    : env_(env), layout_(layout), names_(names), grid_(static_cast<std::size_t>(layout.grid)) {}

disk_scan_report disk_scanner::scan(disk_index& index, std::int64_t now) {
  disk_scan_report r;
  index.clear();
  index.forget_in_flight();
  const std::string& folder = names_.folder();
  if (!env_.make_dir(folder)) return r;

  struct found_chunk {
    std::uint64_t hash;
    df::chunk_header h;
    std::string path;
  };
  struct found_anchor {
    std::string ns;
    df::anchor_header h;
    std::string path;
  };
  std::vector<found_chunk> chunks;
  std::vector<found_anchor> anchors;

  auto sweep = [&](const std::string& path, std::size_t& counter) {
    env_.remove(path);
    ++counter;
  };
  auto foreign = [&](std::uint64_t fingerprint, std::uint32_t grid) {
    return fingerprint != layout_.fingerprint || grid != grid_;
  };

  for (const std::string& name : env_.list(folder)) {
    const std::string path = join_path(folder, name);
    if (is_tmp_name(name)) {
      sweep(path, r.tmp_reaped);
      continue;
    }
    if (auto hash = disk_names::chunk_hash_of(name)) {
      df::chunk_header h;
      switch (check_chunk(path, *hash, h)) {
        case verdict::foreign:
          sweep(path, r.foreign_swept);
          break;
        case verdict::damaged:
          sweep(path, r.damaged_removed);
          break;
        case verdict::ok:
          chunks.push_back({*hash, std::move(h), path});
          break;
      }
      continue;
    }
    if (auto cp = disk_names::checkpoint_of(name)) {
      auto bytes = store::read_record_header(env_, path, df::checkpoint_fixed_bytes, max_header_bytes);
      auto h = bytes ? read_checkpoint_header(bytes->data(), bytes->size())
                     : decode_result<df::checkpoint_header>::failure(df::fault::truncated, "header");
      if (h.ok() && foreign(h.value.fingerprint, h.value.grid)) {
        sweep(path, r.foreign_swept);
      } else if (!h.ok() || h.value.key_hash != cp->first || h.value.rows != cp->second ||
                 env_.size(path) != h.value.file_bytes) {
        sweep(path, r.damaged_removed);
      } else if (index.add_checkpoint(cp->first, cp->second, h.value.file_bytes,
                                      env_.modified_s(path).value_or(now), path)) {
        ++r.indexed;
      }
      continue;
    }
    const std::optional<std::string> ns = disk_names::namespace_of_dir(name);
    if (!ns) continue;
    for (const std::string& aname : env_.list(path)) {
      const std::string apath = join_path(path, aname);
      if (is_tmp_name(aname)) {
        sweep(apath, r.tmp_reaped);
        continue;
      }
      auto key = disk_names::anchor_key_of(aname);
      if (!key) continue;
      df::anchor_header h;
      switch (check_anchor(apath, *key, h)) {
        case verdict::foreign:
          sweep(apath, r.foreign_swept);
          break;
        case verdict::damaged:
          sweep(apath, r.damaged_removed);
          break;
        case verdict::ok:
          anchors.push_back({*ns, std::move(h), apath});
          break;
      }
    }
  }

  // Chunks shortest first, so every parent is indexed before its children; a chunk whose parent
  // is missing can never be used (its chain has a hole) and goes.
  std::sort(chunks.begin(), chunks.end(), [](const found_chunk& a, const found_chunk& b) {
    return a.h.line < b.h.line || (a.h.line == b.h.line && a.hash < b.hash);
  });
  for (auto& c : chunks) {
    if (!index.add_chunk(c.hash, c.h.line, c.h.parent_hash, c.h.file_bytes,
                         env_.modified_s(c.path).value_or(now), c.path)) {
      sweep(c.path, r.damaged_removed);
      continue;
    }
    ++r.indexed;
  }
  for (auto& a : anchors) {
    if (!index.add_anchor(a.ns, a.h.chunk_hashes, a.h.file_bytes, env_.modified_s(a.path).value_or(now),
                          a.path)) {
      sweep(a.path, r.damaged_removed);
      continue;
    }
    ++r.indexed;
  }
  return r;
}

std::size_t disk_scanner::adopt(disk_index& index, const std::vector<std::string>& chunk_paths,
                                const std::string& ns, const std::string& anchor_path, std::int64_t now) {
  struct found {
    std::uint64_t hash;
    df::chunk_header h;
    const std::string* path;
  };
  std::vector<found> chunks;
  for (const std::string& path : chunk_paths) {
    const std::string name = path.substr(path.find_last_of('/') + 1);
    const auto hash = disk_names::chunk_hash_of(name);
    df::chunk_header h;
    if (!hash || check_chunk(path, *hash, h) != verdict::ok) {
      env_.remove(path);
      continue;
    }
    chunks.push_back({*hash, std::move(h), &path});
  }
  std::sort(chunks.begin(), chunks.end(), [](const found& a, const found& b) { return a.h.line < b.h.line; });
  std::size_t n = 0;
  for (const found& c : chunks) {
    if (index.has_chunk(c.hash)) continue;
    if (!index.add_chunk(c.hash, c.h.line, c.h.parent_hash, c.h.file_bytes, now, *c.path)) {
      env_.remove(*c.path);
      continue;
    }
    ++n;
  }
  const std::string aname = anchor_path.substr(anchor_path.find_last_of('/') + 1);
  const auto key = disk_names::anchor_key_of(aname);
  df::anchor_header h;
  if (!key || !disk_names::valid_ns(ns) || check_anchor(anchor_path, *key, h) != verdict::ok ||
      !index.add_anchor(ns, h.chunk_hashes, h.file_bytes, now, anchor_path)) {
    env_.remove(anchor_path);
    return n;
  }
  return n + 1;
}

std::size_t disk_scanner::remove_ours() {
  std::size_t n = 0;
  const std::string& folder = names_.folder();
  for (const std::string& name : env_.list(folder)) {
    const std::string path = join_path(folder, name);
    if (is_tmp_name(name) || disk_names::chunk_hash_of(name) || disk_names::checkpoint_of(name)) {
      if (env_.remove(path)) ++n;
    } else if (name.rfind("n-", 0) == 0) {
      for (const std::string& a : env_.list(path))
        if ((is_tmp_name(a) || disk_names::anchor_key_of(a)) && env_.remove(join_path(path, a))) ++n;
    }
  }
  return n;
}

std::vector<std::uint64_t> other_engines_chunks(file_env& env, const std::string& dir,
                                                std::uint64_t own_fingerprint, std::size_t limit) {
  std::vector<std::uint64_t> out;
  for (const std::string& name : env.list(dir)) {
    const auto fingerprint = disk_names::fingerprint_of_dir(name);
    if (!fingerprint || *fingerprint == own_fingerprint) continue;
    for (const std::string& file : env.list(join_path(dir, name))) {
      if (out.size() >= limit) return out;
      if (auto hash = disk_names::chunk_hash_of(file)) out.push_back(*hash);
    }
  }
  return out;
}

}  // namespace anchorage
