#include "runtime/disk/disk_index.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/core/image_end.hpp"
#include "runtime/disk/disk_codec.hpp"
#include "runtime/disk/disk_names.hpp"

namespace anchorage {

disk_index::disk_index(std::size_t grid, const eviction_clock& clock, disk_eviction_options options)
    : grid_(grid),
      clock_(clock),
      options_(options),
      eviction_(std::make_unique<disk_eviction>(clock, options)) {
  if (grid_ == 0) throw std::invalid_argument("disk_index: a grid of 0");
}

bool disk_index::add_chunk(std::uint64_t hash, std::size_t line, std::uint64_t parent, std::uint64_t bytes,
                           std::int64_t last_use_s, std::string path) {
  const bool first = line <= grid_;  // rows from 0: on the first line, or a tail below it
  if (line == 0 || chunks_.count(hash) != 0 || (!first && chunks_.count(parent) == 0)) return false;
  // A chunk's parent is the chunk at the grid line below it, wherever it lies.
  if (!first && chunks_.at(parent).line != line - disk_format::chunk_rows(line, grid_)) return false;
  eviction_entry e;
  e.bytes = bytes;
  e.tokens_saved = disk_format::chunk_rows(line, grid_);
  e.last_use_s = last_use_s;
  if (!first) e.parent = parent;
  if (!eviction_->add(hash, e)) return false;
  chunks_[hash] = disk_chunk_entry{line, first ? 0 : parent, bytes};
  paths_[hash] = std::move(path);
  return true;
}

bool disk_index::add_anchor(const std::string& ns, std::vector<std::uint64_t> chain, std::uint64_t bytes,
                            std::int64_t last_use_s, std::string path) {
  if (chain.empty() || !chain_indexed(chain)) return false;
  const std::uint64_t key = chain.back();
  // The anchor sits at its last chunk's line: the grid lines below, then that one.
  const std::size_t line = chunks_.at(key).line;
  if (chain.size() != disk_format::chain_length(line, grid_)) return false;
  for (std::size_t i = 0; i + 1 < chain.size(); ++i)
    if (chunks_.at(chain[i]).line != (i + 1) * grid_) return false;
  const std::uint64_t id = disk_names::anchor_id(ns, key);
  if (anchors_.count(id) != 0) return false;
  eviction_entry e;
  e.bytes = bytes;
  e.tokens_saved = line;
  e.last_use_s = last_use_s;
  e.parent = key;
  if (!eviction_->add(id, e)) return false;
  std::uint64_t read_bytes = bytes;
  for (std::uint64_t c : chain) read_bytes += chunks_.at(c).bytes;
  anchor_files_bytes_ += bytes;
  for (std::uint64_t c : chain) {
    auto& [refs, chunk_bytes] = chain_refs_[c];
    if (refs++ == 0) {
      chunk_bytes = chunks_.at(c).bytes;
      anchor_files_bytes_ += chunk_bytes;
    }
  }
  anchors_[id] = disk_anchor_entry{ns, line, std::move(chain), bytes, read_bytes};
  anchored_bytes_ += read_bytes;
  ++anchor_lines_[line];
  paths_[id] = std::move(path);
  return true;
}

bool disk_index::add_checkpoint(std::uint64_t key_hash, std::size_t rows, std::uint64_t bytes,
                                std::int64_t last_use_s, std::string path) {
  const std::uint64_t id = disk_names::checkpoint_id(key_hash, rows);
  if (checkpoints_.count(id) == 0) {
    eviction_entry e;
    e.bytes = bytes;
    e.tokens_saved = rows;
    e.last_use_s = last_use_s;
    if (!eviction_->add(id, e)) return false;
  }
  checkpoints_[id] = disk_checkpoint_entry{key_hash, rows, bytes};
  paths_[id] = std::move(path);
  return true;
}

std::vector<std::string> disk_index::remove(std::uint64_t id) {
  std::vector<std::string> gone_paths;
  for (std::uint64_t gone : eviction_->remove(id)) {
    if (auto p = paths_.find(gone); p != paths_.end()) {
      gone_paths.push_back(std::move(p->second));
      paths_.erase(p);
    }
    chunks_.erase(gone);
    if (auto a = anchors_.find(gone); a != anchors_.end()) {
      anchored_bytes_ -= a->second.read_bytes;
      anchor_files_bytes_ -= a->second.bytes;
      for (std::uint64_t c : a->second.chain) {
        auto r = chain_refs_.find(c);
        if (r != chain_refs_.end() && --r->second.first == 0) {
          anchor_files_bytes_ -= r->second.second;
          chain_refs_.erase(r);
        }
      }
      if (auto l = anchor_lines_.find(a->second.line); l != anchor_lines_.end() && --l->second == 0)
        anchor_lines_.erase(l);
      anchors_.erase(a);
    }
    checkpoints_.erase(gone);
  }
  return gone_paths;
}

void disk_index::clear() {
  chunks_.clear();
  anchors_.clear();
  anchor_lines_.clear();
  checkpoints_.clear();
  paths_.clear();
  chain_refs_.clear();
  anchor_files_bytes_ = anchored_bytes_ = 0;
  ++epoch_;
  eviction_ = std::make_unique<disk_eviction>(clock_, options_);
}

bool disk_index::chain_indexed(const std::vector<std::uint64_t>& chain) const {
  return std::all_of(chain.begin(), chain.end(), [&](std::uint64_t h) { return chunks_.count(h) != 0; });
}

disk_hit disk_index::hit_of(const disk_anchor_entry& a) const {
  disk_hit h;
  h.ns = a.ns;
  h.line = a.line;
  h.read_bytes = a.read_bytes;
  return h;
}

std::optional<disk_hit> disk_index::find(const std::vector<token_id>& prompt, const std::string& ns) const {
  if (prompt.size() < 2 || !disk_names::valid_ns(ns) || anchors_.empty()) return std::nullopt;
  const std::size_t top = (prompt.size() - 1) / grid_ * grid_;
  // The lines an anchor may sit at, highest first: every grid line, and right after every image
  // whose end lies off the grid (the row after its last, a text row the prefill still forwards).
  std::vector<std::pair<std::size_t, std::uint64_t>> lines;  // line, prefix hash
  const std::vector<std::uint64_t> hashes =
      top == 0 ? std::vector<std::uint64_t>{} : chunk_hashes(prompt, top, grid_);
  for (std::size_t i = 0; i < hashes.size(); ++i) lines.emplace_back((i + 1) * grid_, hashes[i]);
  for (std::size_t p = 1; p < prompt.size(); ++p)
    if (p % grid_ != 0 && image_ends_at(prompt, p)) lines.emplace_back(p, prefix_hash(prompt.data(), p));
  std::sort(lines.begin(), lines.end());
  for (std::size_t i = lines.size(); i-- > 0;) {
    const auto [line, hash] = lines[i];
    if (ends_in_image_key_rows(prompt, line)) continue;
    auto it = anchors_.find(disk_names::anchor_id(ns, hash));
    if (it == anchors_.end() || it->second.ns != ns || it->second.line != line ||
        !chain_indexed(it->second.chain))
      continue;
    return hit_of(it->second);
  }
  return std::nullopt;
}

std::optional<disk_hit> disk_index::find_exact(const std::vector<token_id>& tokens,
                                               const std::string& ns) const {
  const std::size_t n = tokens.size();
  if (n == 0 || !disk_names::valid_ns(ns)) return std::nullopt;
  auto it = anchors_.find(disk_names::anchor_id(ns, prefix_hash(tokens.data(), n)));
  if (it == anchors_.end() || it->second.ns != ns || it->second.line != n || !chain_indexed(it->second.chain))
    return std::nullopt;
  return hit_of(it->second);
}

std::size_t disk_index::longest_durable_prefix_tokens() const {
  return anchor_lines_.empty() ? 0 : anchor_lines_.rbegin()->first;
}

std::vector<const disk_anchor_entry*> disk_index::usable_anchors() const {
  std::vector<const disk_anchor_entry*> out;
  for (const auto& [id, a] : anchors_)
    if (chain_indexed(a.chain)) out.push_back(&a);
  return out;
}

std::optional<disk_checkpoint_hit> disk_index::find_checkpoint(std::uint64_t key_hash) const {
  std::optional<disk_checkpoint_hit> best;
  for (const auto& [id, c] : checkpoints_)
    if (c.key_hash == key_hash && (!best || c.rows > best->rows))
      best = disk_checkpoint_hit{c.key_hash, c.rows, c.bytes};
  return best;
}

std::vector<std::uint64_t> disk_index::checkpoints_of(std::uint64_t key_hash) const {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, c] : checkpoints_)
    if (c.key_hash == key_hash) ids.push_back(id);
  return ids;
}

const disk_chunk_entry* disk_index::chunk(std::uint64_t hash) const {
  auto it = chunks_.find(hash);
  return it == chunks_.end() ? nullptr : &it->second;
}
const disk_anchor_entry* disk_index::anchor(std::uint64_t id) const {
  auto it = anchors_.find(id);
  return it == anchors_.end() ? nullptr : &it->second;
}
const disk_checkpoint_entry* disk_index::checkpoint(std::uint64_t id) const {
  auto it = checkpoints_.find(id);
  return it == checkpoints_.end() ? nullptr : &it->second;
}
const std::string* disk_index::path(std::uint64_t id) const {
  auto it = paths_.find(id);
  return it == paths_.end() ? nullptr : &it->second;
}

std::vector<std::string> disk_index::all_paths() const {
  std::vector<std::string> out;
  out.reserve(paths_.size());
  for (const auto& [id, p] : paths_) out.push_back(p);
  return out;
}

std::vector<std::uint64_t> disk_index::superseded_by(std::uint64_t id) const {
  std::vector<std::uint64_t> older;
  const disk_anchor_entry* a = anchor(id);
  if (!a) return older;
  // An anchor off the grid lies on no other anchor's chain: only the grid lines below are shared.
  for (const auto& [oid, o] : anchors_)
    if (oid != id && o.ns == a->ns && o.line < a->line && o.line % grid_ == 0 &&
        a->chain[o.line / grid_ - 1] == o.chain.back())
      older.push_back(oid);
  return older;
}

std::vector<std::uint64_t> disk_index::older_checkpoints(std::uint64_t key_hash, std::size_t rows) const {
  std::vector<std::uint64_t> older;
  for (const auto& [oid, c] : checkpoints_)
    if (c.key_hash == key_hash && c.rows < rows) older.push_back(oid);
  return older;
}

void disk_index::release_in_flight(std::uint64_t id) {
  if (auto it = in_flight_.find(id); it != in_flight_.end() && --it->second <= 0) in_flight_.erase(it);
}

}  // namespace anchorage
