#include "runtime/disk/disk_store.hpp"

#include <algorithm>

#include "protocol/checkpoint_format.hpp"
#include "runtime/disk/checkpoint_codec.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/disk/disk_store_detail.hpp"

namespace anchorage {

using namespace disk_store_detail;

// ---- Scan -------------------------------------------------------------------------------------

disk_scan_report disk_store::scan() {
  disk_scan_report r;
  chunks_.clear();
  anchors_.clear();
  paths_.clear();
  checkpoints_.clear();
  in_flight_.clear();
  ++epoch_;
  eviction_ = std::make_unique<disk_eviction>(clock_, options_.eviction);
  if (!env_.make_dir(folder_)) return r;
  const std::int64_t now = clock_.now_s();

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

  for (const std::string& name : env_.list(folder_)) {
    const std::string path = join_path(folder_, name);
    if (is_tmp_name(name)) {
      sweep(path, r.tmp_reaped);
      continue;
    }
    if (auto hash = name_hash(name, chunk_prefix, chunk_suffix)) {
      auto bytes = read_header_bytes(env_, path, df::chunk_fixed_bytes);
      auto h = bytes ? read_chunk_header(bytes->data(), bytes->size())
                     : decode_result<df::chunk_header>::failure(df::fault::truncated, "header");
      if (h.ok() && foreign(h.value.fingerprint, h.value.grid)) {
        sweep(path, r.foreign_swept);
      } else if (!h.ok() || h.value.prefix_hash != *hash || env_.size(path) != h.value.file_bytes ||
                 h.value.line == 0 || h.value.line % grid_ != 0 ||
                 h.value.file_bytes != chunk_file_bytes(layout_)) {
        sweep(path, r.damaged_removed);
      } else {
        chunks.push_back({*hash, std::move(h.value), path});
      }
      continue;
    }
    if (auto cp = parse_checkpoint_name(name)) {
      auto bytes = read_header_bytes(env_, path, df::checkpoint_fixed_bytes);
      auto h = bytes ? read_checkpoint_header(bytes->data(), bytes->size())
                     : decode_result<df::checkpoint_header>::failure(df::fault::truncated, "header");
      if (h.ok() && foreign(h.value.fingerprint, h.value.grid)) {
        sweep(path, r.foreign_swept);
        continue;
      }
      if (!h.ok() || h.value.key_hash != cp->first || h.value.rows != cp->second ||
          env_.size(path) != h.value.file_bytes) {
        sweep(path, r.damaged_removed);
        continue;
      }
      eviction_entry e;
      e.bytes = h.value.file_bytes;
      e.tokens_saved = h.value.rows;
      e.last_use_s = env_.modified_s(path).value_or(now);
      const std::uint64_t id = checkpoint_id(name);
      if (eviction_->add(id, e)) {
        checkpoints_[id] = checkpoint_entry{cp->first, cp->second, h.value.file_bytes};
        paths_[id] = path;
        ++r.indexed;
      }
      continue;
    }
    if (!starts_with(name, ns_prefix)) continue;
    const std::string dir_ns = name.substr(std::string(ns_prefix).size());
    const std::string ns = dir_ns == default_ns_dir ? std::string() : dir_ns;
    if (!valid_ns(ns)) continue;
    for (const std::string& aname : env_.list(path)) {
      const std::string apath = join_path(path, aname);
      if (is_tmp_name(aname)) {
        sweep(apath, r.tmp_reaped);
        continue;
      }
      auto key = name_hash(aname, anchor_prefix, anchor_suffix);
      if (!key) continue;
      auto bytes = read_header_bytes(env_, apath, df::anchor_fixed_bytes);
      auto h = bytes ? read_anchor_header(bytes->data(), bytes->size())
                     : decode_result<df::anchor_header>::failure(df::fault::truncated, "header");
      if (h.ok() && foreign(h.value.fingerprint, h.value.grid)) {
        sweep(apath, r.foreign_swept);
      } else if (!h.ok() || h.value.chunk_hashes.empty() || h.value.chunk_hashes.back() != *key ||
                 env_.size(apath) != h.value.file_bytes || h.value.line != h.value.chunk_hashes.size() * grid_) {
        sweep(apath, r.damaged_removed);
      } else {
        anchors.push_back({ns, std::move(h.value), apath});
      }
    }
  }

  // Chunks shortest first, so every parent is indexed before its children; a chunk whose parent
  // is missing can never be used (its chain has a hole) and goes.
  std::sort(chunks.begin(), chunks.end(), [](const found_chunk& a, const found_chunk& b) {
    return a.h.line < b.h.line || (a.h.line == b.h.line && a.hash < b.hash);
  });
  for (auto& c : chunks) {
    const bool first = c.h.line == grid_;
    if ((!first && chunks_.count(c.h.parent_hash) == 0) || chunks_.count(c.hash) != 0) {
      sweep(c.path, r.damaged_removed);
      continue;
    }
    eviction_entry e;
    e.bytes = c.h.file_bytes;
    e.tokens_saved = grid_;
    e.last_use_s = env_.modified_s(c.path).value_or(now);
    if (!first) e.parent = c.h.parent_hash;
    if (!eviction_->add(c.hash, e)) {
      sweep(c.path, r.damaged_removed);
      continue;
    }
    chunks_[c.hash] = chunk_entry{c.h.line, first ? 0 : c.h.parent_hash, c.h.file_bytes};
    paths_[c.hash] = c.path;
    ++r.indexed;
  }
  for (auto& a : anchors) {
    const std::uint64_t key = a.h.chunk_hashes.back();
    const std::uint64_t id = anchor_id(a.ns, key);
    if (!chain_indexed(a.h.chunk_hashes) || anchors_.count(id) != 0) {
      sweep(a.path, r.damaged_removed);
      continue;
    }
    eviction_entry e;
    e.bytes = a.h.file_bytes;
    e.tokens_saved = a.h.line;
    e.last_use_s = env_.modified_s(a.path).value_or(now);
    e.parent = key;
    if (!eviction_->add(id, e)) {
      sweep(a.path, r.damaged_removed);
      continue;
    }
    anchors_[id] = anchor_entry{a.ns, a.h.line, std::move(a.h.chunk_hashes), a.h.file_bytes};
    paths_[id] = a.path;
    ++r.indexed;
  }
  return r;
}

}  // namespace anchorage
