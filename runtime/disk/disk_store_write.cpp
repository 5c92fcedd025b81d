#include "runtime/disk/disk_store.hpp"

#include <algorithm>
#include <future>
#include <memory>
#include <stdexcept>
#include <unordered_set>

#include "runtime/disk/disk_codec.hpp"
#include "runtime/disk/disk_store_detail.hpp"

namespace anchorage {

using namespace disk_store_detail;

// ---- Writes -----------------------------------------------------------------------------------

std::vector<std::uint64_t> disk_store::line_hashes(const staged_write& w) const {
  const std::size_t top = w.tokens.size() / grid_ * grid_;
  return top == 0 ? std::vector<std::uint64_t>{} : chunk_hashes(w.tokens, top, grid_);
}

std::uint64_t disk_store::bytes_needed(const staged_write& w) const {
  std::uint64_t n = 0;
  std::vector<std::size_t> lines = w.chunks;
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  for (std::size_t b : lines)
    if (b > 0 && b % grid_ == 0 && b <= w.tokens.size() && chunks_.count(prefix_hash(w.tokens.data(), b)) == 0)
      n += chunk_file_bytes(layout_);
  for (const auto& a : w.anchors)
    if (a.line > 0 && a.line % grid_ == 0 && a.line <= w.tokens.size() &&
        anchors_.count(anchor_id(w.ns, prefix_hash(w.tokens.data(), a.line))) == 0)
      n += anchor_file_bytes(layout_, a.line);
  return n;
}

bool disk_store::known_chunk(std::uint64_t hash) const {
  return chunks_.count(hash) != 0 || in_flight_.count(hash) != 0;
}

disk_write_plan disk_store::prepare(const staged_write& w) {
  disk_write_plan p;
  p.epoch = epoch_;
  if (!valid_ns(w.ns)) {
    p.refused = true;
    p.error = "namespace '" + w.ns + "' is not a plain name";
    ++refusals_;
    return p;
  }
  std::vector<std::size_t> lines = w.chunks;
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  // The prefix hash at every line of the write, in one pass: hashes[b / grid - 1] is line b's.
  const std::vector<std::uint64_t> hashes = line_hashes(w);
  std::unordered_map<std::uint64_t, bool> planned;
  for (std::size_t b : lines) {
    if (b == 0 || b % grid_ != 0 || b > w.tokens.size()) continue;
    const std::uint64_t hash = hashes[b / grid_ - 1];
    if (known_chunk(hash)) {
      ++p.chunks_present;
      continue;
    }
    // A hole below (a line neither on disk nor written here): nothing above it could be used.
    if (b > grid_) {
      const std::uint64_t parent = hashes[b / grid_ - 2];
      if (!known_chunk(parent) && planned.count(parent) == 0) break;
    }
    planned[hash] = true;
    p.files.push_back({false, false, b, 0, folder_, chunk_prefix + hex16(hash) + chunk_suffix});
    p.bytes += chunk_file_bytes(layout_);
  }
  for (std::size_t i = 0; i < w.anchors.size(); ++i) {
    const std::size_t line = w.anchors[i].line;
    if (line == 0 || line % grid_ != 0 || line > w.tokens.size()) continue;
    const auto chain_end = hashes.begin() + static_cast<long>(line / grid_);
    const std::uint64_t key = *(chain_end - 1);
    const std::uint64_t id = anchor_id(w.ns, key);
    if (anchors_.count(id) != 0 || in_flight_.count(id) != 0) continue;
    if (!std::all_of(hashes.begin(), chain_end,
                     [&](std::uint64_t h) { return known_chunk(h) || planned.count(h) != 0; }))
      continue;
    p.files.push_back({true, false, line, i, anchor_dir(w.ns), anchor_prefix + hex16(key) + anchor_suffix});
    p.bytes += anchor_file_bytes(layout_, line);
  }
  // Never evict the chunks this write stands on (its chain's, closed under parents).
  std::unordered_set<std::uint64_t> keep;
  std::size_t top = 0;
  for (const auto& f : p.files) top = std::max(top, f.line);
  for (std::size_t i = 0; i < top / grid_; ++i)
    if (chunks_.count(hashes[i]) != 0) keep.insert(hashes[i]);
  make_room(p, keep);
  if (p.refused) return p;
  for (const auto& f : p.files) {
    const std::uint64_t key = hashes[f.line / grid_ - 1];
    ++in_flight_[f.anchor ? anchor_id(w.ns, key) : key];
  }
  return p;
}

std::vector<disk_file_result> execute_disk_write(file_env& env, const state_layout& layout,
                                                 const staged_write& w, const disk_write_plan& plan) {
  std::vector<disk_file_result> out;
  const std::size_t grid = static_cast<std::size_t>(layout.grid);
  // File i is written on a helper thread (which alone uses the env meanwhile) while file i + 1
  // is encoded here, so the encoding's copies and crcs overlap the I/O.
  std::future<file_result> writing;
  std::size_t written_bytes = 0;
  auto collect = [&]() {
    const file_result fr = writing.get();
    disk_file_result r;
    r.ok = fr.ok;
    r.bytes = written_bytes;
    r.error = fr.message;
    out.push_back(std::move(r));
    return fr.ok;
  };
  for (const auto& f : plan.files) {
    // The file as pieces: a head (header, ids) encoded here over the staged bytes, then the
    // staged rows or sections themselves, never copied into a file buffer.
    auto head = std::make_shared<std::vector<unsigned char>>();
    auto pieces = std::make_shared<std::vector<file_piece>>();
    std::size_t total = 0;
    try {
      if (f.checkpoint) {
        *head = encode_checkpoint(staged_state(layout, w, &w.anchors.at(0)), plan.checkpoint.value());
      } else if (f.anchor) {
        const staged_anchor& a = w.anchors.at(f.anchor_index);
        std::vector<const unsigned char*> sections;
        for (std::size_t i = 0; i < layout.sections.size(); ++i) {
          if (i >= a.sections.size() || a.sections[i].size() != layout.sections[i].bytes)
            throw std::out_of_range("section " + std::to_string(i) + " of line " + std::to_string(a.line));
          sections.push_back(a.sections[i].data());
        }
        *head = encode_anchor_head(layout, f.line, chunk_hashes(w.tokens, f.line, grid), sections);
        for (std::size_t i = 0; i < sections.size(); ++i) pieces->push_back({sections[i], layout.sections[i].bytes});
      } else {
        if (f.line < grid || f.line - grid < w.row_lo || f.line > w.row_hi || w.rows.size() != layout.views.size())
          throw std::out_of_range("rows below line " + std::to_string(f.line) + " are not staged");
        std::vector<const unsigned char*> rows;
        for (std::size_t v = 0; v < layout.views.size(); ++v)
          rows.push_back(w.rows[v].data() + (f.line - grid - w.row_lo) * layout.views[v].bytes_per_token);
        *head = encode_chunk_head(layout, f.line, w.tokens, rows);
        for (std::size_t v = 0; v < rows.size(); ++v) pieces->push_back({rows[v], grid * layout.views[v].bytes_per_token});
      }
    } catch (const std::exception& e) {
      if (writing.valid() && !collect()) return out;
      disk_file_result r;
      r.error = std::string("not staged: ") + e.what();
      out.push_back(std::move(r));
      return out;
    }
    pieces->insert(pieces->begin(), {head->data(), head->size()});
    for (const auto& p : *pieces) total += p.second;
    if (writing.valid() && !collect()) return out;  // the file below failed: nothing above
    written_bytes = total;
    const bool dir = f.anchor || f.checkpoint;
    writing = std::async(std::launch::async, [&env, &f, dir, head, pieces] {
      file_result fr = dir ? env.make_dir(f.dir) : file_result::success();
      if (fr) fr = env.write_atomic(f.dir, f.name, *pieces);
      return fr;
    });
  }
  if (writing.valid()) collect();
  return out;
}

disk_write_report disk_store::commit(const staged_write& w, const disk_write_plan& plan,
                                     const std::vector<disk_file_result>& results) {
  disk_write_report r;
  r.refused = plan.refused;
  r.chunks_present = plan.chunks_present;
  if (plan.refused) r.error = plan.error;
  pending_bytes_ -= std::min(pending_bytes_, plan.pending);
  const std::int64_t now = clock_.now_s();
  const std::vector<std::uint64_t> hashes = plan.checkpoint ? std::vector<std::uint64_t>{} : line_hashes(w);
  for (std::size_t i = 0; i < plan.files.size(); ++i) {
    const disk_file_job& f = plan.files[i];
    if (f.checkpoint) {
      if (i < results.size()) commit_checkpoint(f, *plan.checkpoint, plan.epoch, results[i], r);
      continue;
    }
    const std::uint64_t key = hashes[f.line / grid_ - 1];
    const std::uint64_t id = f.anchor ? anchor_id(w.ns, key) : key;
    if (auto it = in_flight_.find(id); it != in_flight_.end() && --it->second <= 0) in_flight_.erase(it);
    if (i >= results.size()) continue;  // not written: an earlier file failed
    const std::string path = join_path(f.dir, f.name);
    if (!results[i].ok) {
      r.failed = true;
      r.error = results[i].error;
      ++write_failures_;
      warn_once(results[i].error);
      // A failure after the rename (the directory's fsync) leaves the file: not durable, not ours.
      if (paths_.count(id) == 0) env_.remove(path);
      continue;
    }
    // Indexed only when everything it stands on still is (an eviction, a failed restore or a
    // clear may have taken a part meanwhile); otherwise it could never be used.
    bool usable = plan.epoch == epoch_;
    std::vector<std::uint64_t> chain;
    std::uint64_t parent = 0;
    if (f.anchor) {
      chain.assign(hashes.begin(), hashes.begin() + static_cast<long>(f.line / grid_));
      usable = usable && chain_indexed(chain) && anchors_.count(id) == 0;
    } else {
      parent = f.line > grid_ ? hashes[f.line / grid_ - 2] : 0;
      usable = usable && (f.line == grid_ || chunks_.count(parent) != 0) && chunks_.count(id) == 0;
    }
    if (!usable) {
      env_.remove(path);
      continue;
    }
    eviction_entry e;
    e.bytes = results[i].bytes;
    e.tokens_saved = f.anchor ? f.line : grid_;
    e.last_use_s = now;
    if (f.anchor) e.parent = key;
    if (!f.anchor && f.line > grid_) e.parent = parent;
    eviction_->add(id, e);
    paths_[id] = path;
    r.bytes_written += results[i].bytes;
    bytes_written_ += results[i].bytes;
    ++files_written_;
    if (!f.anchor) {
      chunks_[id] = chunk_entry{f.line, parent, results[i].bytes};
      ++r.chunks_written;
      continue;
    }
    anchors_[id] = anchor_entry{w.ns, f.line, chain, results[i].bytes};
    ++r.anchors_written;
    if (!w.supersede) continue;
    // Only once the new anchor is durable: the namespace's anchors on its chain below it.
    std::vector<std::uint64_t> older;
    for (const auto& [oid, o] : anchors_)
      if (oid != id && o.ns == w.ns && o.line < f.line && chain[o.line / grid_ - 1] == o.chain.back())
        older.push_back(oid);
    for (std::uint64_t oid : older) {
      drop(oid);
      ++r.superseded;
      ++superseded_;
    }
  }
  return r;
}

void disk_store::make_room(disk_write_plan& p, const std::unordered_set<std::uint64_t>& keep) {
  const std::uint64_t cap = options_.entry_max_bytes ? options_.entry_max_bytes : options_.eviction.budget_bytes;
  if (p.bytes > cap || p.bytes > options_.eviction.budget_bytes) {
    p.refused = true;
    p.error = "the write needs " + std::to_string(p.bytes) + " bytes, over the cap of " + std::to_string(cap);
    p.files.clear();
    ++refusals_;
    return;
  }
  if (p.bytes == 0) return;
  // Room first, from the sizes alone (nothing is encoded yet), counting the writes still in
  // flight, which neither the index nor the file system's free space shows yet.
  const std::uint64_t incoming = p.bytes + pending_bytes_;
  const std::uint64_t free = env_.free_bytes(folder_).value_or(~std::uint64_t{0} / 4);
  for (std::uint64_t id : eviction_->plan_evictions(free, incoming, keep))
    if (eviction_->contains(id)) evictions_ += static_cast<long>(drop(id));
  const std::uint64_t free_after = env_.free_bytes(folder_).value_or(~std::uint64_t{0} / 4);
  if (eviction_->held_bytes() + incoming > options_.eviction.budget_bytes ||
      free_after < options_.eviction.min_free_bytes + incoming) {
    p.refused = true;
    p.error = "no room for " + std::to_string(p.bytes) + " bytes";
    p.files.clear();
    ++refusals_;
    return;
  }
  p.pending = p.bytes;
  pending_bytes_ += p.bytes;
}

disk_write_report disk_store::write(const staged_write& w) {
  const disk_write_plan plan = prepare(w);
  return commit(w, plan, execute_disk_write(env_, layout_, w, plan));
}

bool disk_store::store(const std::vector<token_id>& tokens, const state_adapter& from, const std::string& ns) {
  const std::size_t line = from.valid_length();
  if (line == 0 || line % grid_ != 0 || tokens.size() < line)
    throw std::invalid_argument("disk_store::store: the state is at " + std::to_string(line) +
                                ", not a line of the grid within the " + std::to_string(tokens.size()) +
                                " tokens");
  staged_write w;
  w.tokens.assign(tokens.begin(), tokens.begin() + static_cast<long>(line));
  w.ns = ns;
  w.supersede = true;
  for (std::size_t b = grid_; b <= line; b += grid_) w.chunks.push_back(b);
  // Only the rows whose chunk is missing are copied.
  std::size_t lo = line;
  for (std::size_t b = grid_; b <= line; b += grid_)
    if (chunks_.count(prefix_hash(w.tokens.data(), b)) == 0) {
      lo = b - grid_;
      break;
    }
  stage_rows(w, from, lo, line);
  w.anchors.push_back(stage_sections(from, line));
  const disk_write_report r = write(w);
  if (r.refused || r.failed) return false;
  return anchors_.count(anchor_id(ns, prefix_hash(w.tokens.data(), line))) != 0;
}

}  // namespace anchorage
