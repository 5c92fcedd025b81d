#include "runtime/disk/disk_write_planner.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "runtime/disk/disk_codec.hpp"

namespace anchorage {

disk_write_planner::disk_write_planner(const state_layout& layout, const disk_names& names,
                                       const disk_index& index, disk_write_limits limits)
    : layout_(layout), names_(names), index_(index), limits_(limits), grid_(index.grid()) {}

std::vector<std::uint64_t> disk_write_planner::line_hashes(const staged_write& w) const {
  const std::size_t top = w.tokens.size() / grid_ * grid_;
  return top == 0 ? std::vector<std::uint64_t>{} : chunk_hashes(w.tokens, top, grid_);
}

std::uint64_t disk_write_planner::key_at(const staged_write& w, const std::vector<std::uint64_t>& hashes,
                                         std::size_t line) const {
  return line % grid_ == 0 ? hashes[line / grid_ - 1] : prefix_hash(w.tokens.data(), line);
}

std::vector<std::uint64_t> disk_write_planner::chain_at(const staged_write& w,
                                                        const std::vector<std::uint64_t>& hashes,
                                                        std::size_t line) const {
  std::vector<std::uint64_t> chain(hashes.begin(), hashes.begin() + static_cast<long>(line / grid_));
  if (line % grid_ != 0) chain.push_back(prefix_hash(w.tokens.data(), line));
  return chain;
}

std::uint64_t disk_write_planner::bytes_needed(const staged_write& w) const {
  std::uint64_t n = 0;
  std::vector<std::size_t> lines = w.chunks;
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  for (std::size_t b : lines)
    if (b > 0 && b <= w.tokens.size() && !index_.has_chunk(prefix_hash(w.tokens.data(), b)))
      n += chunk_file_bytes(layout_, b);
  for (const auto& a : w.anchors)
    if (a.line > 0 && a.line <= w.tokens.size() &&
        !index_.has_anchor(disk_names::anchor_id(w.ns, prefix_hash(w.tokens.data(), a.line))))
      n += anchor_file_bytes(layout_, a.line);
  return n;
}

disk_write_plan disk_write_planner::plan(const staged_write& w, std::uint64_t free_bytes) const {
  disk_write_plan p;
  p.epoch = index_.epoch();
  if (!disk_names::valid_ns(w.ns)) {
    p.refused = true;
    p.error = "namespace '" + w.ns + "' is not a plain name";
    return p;
  }
  std::vector<std::size_t> lines = w.chunks;
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  // The prefix hash at every line of the write, in one pass: hashes[b / grid - 1] is line b's.
  const std::vector<std::uint64_t> hashes = line_hashes(w);
  std::unordered_set<std::uint64_t> planned;
  // Tail chunks (lines off the grid, right after an image) sit beside the grid chunks: a hole
  // below one ends nothing but it.
  for (std::size_t b : lines) {
    if (b == 0 || b > w.tokens.size()) continue;
    const std::uint64_t hash = key_at(w, hashes, b);
    if (index_.known_chunk(hash)) {
      ++p.chunks_present;
      continue;
    }
    // A hole below (a line neither on disk nor written here): nothing above it could be used.
    const std::size_t below = b - disk_format::chunk_rows(b, grid_);
    if (below > 0) {
      const std::uint64_t parent = hashes[below / grid_ - 1];
      if (!index_.known_chunk(parent) && planned.count(parent) == 0) {
        if (b % grid_ == 0) break;
        continue;
      }
    }
    planned.insert(hash);
    p.files.push_back({false, false, b, 0, names_.folder(), names_.chunk_name(hash), hash});
    p.bytes += chunk_file_bytes(layout_, b);
  }
  for (std::size_t i = 0; i < w.anchors.size(); ++i) {
    const std::size_t line = w.anchors[i].line;
    if (line == 0 || line > w.tokens.size()) continue;
    const std::vector<std::uint64_t> chain = chain_at(w, hashes, line);
    const std::uint64_t key = chain.back();
    const std::uint64_t id = disk_names::anchor_id(w.ns, key);
    if (index_.has_anchor(id) || index_.in_flight(id)) continue;
    if (!std::all_of(chain.begin(), chain.end(),
                     [&](std::uint64_t h) { return index_.known_chunk(h) || planned.count(h) != 0; }))
      continue;
    p.files.push_back({true, false, line, i, names_.anchor_dir(w.ns), names_.anchor_name(key), id});
    p.bytes += anchor_file_bytes(layout_, line);
  }
  // Never evict the chunks this write stands on (its chain's, closed under parents).
  std::unordered_set<std::uint64_t> keep;
  std::size_t top = 0;
  for (const auto& f : p.files) top = std::max(top, f.line);
  for (std::size_t i = 0; i < top / grid_; ++i)
    if (index_.has_chunk(hashes[i])) keep.insert(hashes[i]);
  plan_room(p, free_bytes, keep);
  return p;
}

disk_write_plan disk_write_planner::plan_checkpoint(const staged_write& w, const checkpoint_meta& meta,
                                                    std::uint64_t free_bytes) const {
  disk_write_plan p;
  p.epoch = index_.epoch();
  const std::size_t rows = meta.tokens.empty() ? 0 : meta.tokens.size() - 1;
  if (rows == 0 || w.anchors.size() != 1 || w.anchors[0].line != rows || w.row_lo != 0 || w.row_hi != rows) {
    p.refused = true;
    p.error = "a checkpoint needs its whole state staged";
    return p;
  }
  p.checkpoint = meta;
  p.files.push_back({false, true, rows, 0, names_.folder(), disk_names::checkpoint_name(meta.key_hash, rows),
                     disk_names::checkpoint_id(meta.key_hash, rows)});
  p.bytes = checkpoint_file_bytes(layout_, meta.tokens.size());
  plan_room(p, free_bytes, {});
  return p;
}

void disk_write_planner::plan_room(disk_write_plan& p, std::uint64_t free_bytes,
                                   const std::unordered_set<std::uint64_t>& keep) const {
  const std::uint64_t cap = limits_.entry_max_bytes ? limits_.entry_max_bytes : limits_.budget_bytes;
  if (p.bytes > cap || p.bytes > limits_.budget_bytes) {
    p.refused = true;
    p.error = "the write needs " + std::to_string(p.bytes) + " bytes, over the cap of " + std::to_string(cap);
    p.files.clear();
    return;
  }
  if (p.bytes == 0) return;
  // Room first, from the sizes alone (nothing is encoded yet), counting the writes still in
  // flight, which neither the index nor the file system's free space shows yet.
  p.evictions = index_.plan_evictions(free_bytes, p.bytes + index_.pending_bytes(), keep);
}

void disk_write_planner::confirm_room(disk_write_plan& p, std::uint64_t free_bytes_after) const {
  if (p.refused || p.bytes == 0) return;
  const std::uint64_t incoming = p.bytes + index_.pending_bytes();
  if (index_.held_bytes() + incoming > limits_.budget_bytes ||
      free_bytes_after < limits_.min_free_bytes + incoming) {
    p.refused = true;
    p.error = "no room for " + std::to_string(p.bytes) + " bytes";
    p.files.clear();
    return;
  }
  p.pending = p.bytes;
}

}  // namespace anchorage
