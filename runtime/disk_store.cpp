#include "runtime/disk_store.hpp"

#include <xxhash.h>

#include <algorithm>
#include <future>
#include <memory>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <unordered_set>

#include "protocol/disk_format.hpp"
#include "protocol/checkpoint_format.hpp"
#include "runtime/checkpoint_codec.hpp"
#include "runtime/disk_codec.hpp"

namespace anchorage {
namespace {

namespace df = disk_format;

constexpr const char* chunk_prefix = "c-";
constexpr const char* chunk_suffix = ".chk";
constexpr const char* anchor_prefix = "a-";
constexpr const char* anchor_suffix = ".anc";
constexpr const char* ns_prefix = "n-";
constexpr const char* checkpoint_prefix = "g-";
constexpr const char* checkpoint_suffix = ".gen";
constexpr const char* default_ns_dir = "_";
// A header larger than this is damage, not a file of ours (128k rows on a grid of 1 is 1 MiB).
constexpr std::uint64_t max_header_bytes = 64ULL << 20;

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::optional<std::uint64_t> parse_hex16(const std::string& s) {
  if (s.size() != 16) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const char* p) {
  const std::string q(p);
  return s.size() >= q.size() && s.compare(s.size() - q.size(), q.size(), q) == 0;
}

// The hash in "<prefix><16 hex><suffix>", or nullopt.
std::optional<std::uint64_t> name_hash(const std::string& name, const char* prefix, const char* suffix) {
  const std::string p(prefix), s(suffix);
  if (!starts_with(name, prefix) || !ends_with(name, suffix) || name.size() != p.size() + 16 + s.size())
    return std::nullopt;
  return parse_hex16(name.substr(p.size(), 16));
}

// A namespace names a folder: short, plain characters, and not the default's folder name.
bool valid_ns(const std::string& ns) {
  if (ns.empty()) return true;
  if (ns.size() > 64 || ns == default_ns_dir) return false;
  return std::all_of(ns.begin(), ns.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  }) && ns != "." && ns != "..";
}

std::uint32_t get_u32(const unsigned char* d) {
  return static_cast<std::uint32_t>(d[0]) | static_cast<std::uint32_t>(d[1]) << 8 |
         static_cast<std::uint32_t>(d[2]) << 16 | static_cast<std::uint32_t>(d[3]) << 24;
}

// Reads the header of a chunk or anchor file: the fixed part, then header_bytes (offset 16 in
// both formats). nullopt when the file is shorter or the size is absurd.
std::optional<std::vector<unsigned char>> read_header_bytes(file_env& env, const std::string& path,
                                                            std::size_t fixed) {
  std::vector<unsigned char> h(fixed);
  if (!env.read(path, 0, h.data(), fixed)) return std::nullopt;
  const std::uint64_t hb = get_u32(h.data() + df::chunk_offset::header_bytes);
  if (hb < fixed || hb > max_header_bytes) return std::nullopt;
  h.resize(hb);
  if (hb > fixed && !env.read(path, fixed, h.data() + fixed, hb - fixed)) return std::nullopt;
  return h;
}

}  // namespace

disk_store::disk_store(file_env& env, const state_layout& layout, const eviction_clock& clock,
                       disk_store_options options)
    : env_(env),
      layout_(layout),
      clock_(clock),
      options_(std::move(options)),
      folder_(join_path(options_.dir, hex16(layout.fingerprint))),
      grid_(static_cast<std::size_t>(layout.grid)),
      eviction_(std::make_unique<disk_eviction>(clock, options_.eviction)) {
  if (grid_ == 0) throw std::invalid_argument("disk_store: a layout without a grid");
}

std::string disk_store::chunk_path(std::uint64_t hash) const {
  return join_path(folder_, chunk_prefix + hex16(hash) + chunk_suffix);
}

std::string disk_store::anchor_dir(const std::string& ns) const {
  return join_path(folder_, ns_prefix + (ns.empty() ? std::string(default_ns_dir) : ns));
}

std::string disk_store::anchor_path(const std::string& ns, std::uint64_t key) const {
  return join_path(anchor_dir(ns), anchor_prefix + hex16(key) + anchor_suffix);
}

std::string disk_store::checkpoint_name(std::uint64_t key_hash, std::size_t rows) const {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%010llu", static_cast<unsigned long long>(rows));
  return checkpoint_prefix + hex16(key_hash) + "-" + buf + checkpoint_suffix;
}

namespace {
// "g-<16 hex>-<10 digits>.gen" -> (key hash, rows)
std::optional<std::pair<std::uint64_t, std::size_t>> parse_checkpoint_name(const std::string& name) {
  const std::size_t n = std::string(checkpoint_prefix).size() + 16 + 1 + 10 + std::string(checkpoint_suffix).size();
  if (name.size() != n || !starts_with(name, checkpoint_prefix) || !ends_with(name, checkpoint_suffix) || name[18] != '-')
    return std::nullopt;
  auto key = parse_hex16(name.substr(2, 16));
  if (!key) return std::nullopt;
  std::size_t rows = 0;
  for (char c : name.substr(19, 10)) {
    if (c < '0' || c > '9') return std::nullopt;
    rows = rows * 10 + static_cast<std::size_t>(c - '0');
  }
  return std::make_pair(*key, rows);
}
std::uint64_t checkpoint_id(const std::string& name) { return XXH3_64bits(name.data(), name.size()) ^ 0x67656e6572ULL; }
}  // namespace

std::uint64_t disk_store::anchor_id(const std::string& ns, std::uint64_t key) {
  // Distinct from the chunk ids (the bare prefix hashes) and across namespaces.
  return XXH3_64bits_withSeed(ns.data(), ns.size(), key ^ 0x616e63686f72ULL);
}

bool disk_store::chain_indexed(const std::vector<std::uint64_t>& chain) const {
  return std::all_of(chain.begin(), chain.end(), [&](std::uint64_t h) { return chunks_.count(h) != 0; });
}

void disk_store::warn_once(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  std::cerr << "anchorage: the disk tier could not write (" << what
            << "); serving goes on without it for that file (further failures are counted, not printed)\n";
}

std::size_t disk_store::drop(std::uint64_t id) {
  std::size_t n = 0;
  for (std::uint64_t gone : eviction_->remove(id)) {
    auto p = paths_.find(gone);
    if (p != paths_.end()) {
      env_.remove(p->second);
      paths_.erase(p);
      ++n;
    }
    chunks_.erase(gone);
    anchors_.erase(gone);
    checkpoints_.erase(gone);
  }
  return n;
}

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

// ---- Writes -----------------------------------------------------------------------------------

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
  std::unordered_map<std::uint64_t, bool> planned;
  for (std::size_t b : lines) {
    if (b == 0 || b % grid_ != 0 || b > w.tokens.size()) continue;
    const std::uint64_t hash = prefix_hash(w.tokens.data(), b);
    if (known_chunk(hash)) {
      ++p.chunks_present;
      continue;
    }
    // A hole below (a line neither on disk nor written here): nothing above it could be used.
    if (b > grid_) {
      const std::uint64_t parent = prefix_hash(w.tokens.data(), b - grid_);
      if (!known_chunk(parent) && planned.count(parent) == 0) break;
    }
    planned[hash] = true;
    p.files.push_back({false, false, b, 0, folder_, chunk_prefix + hex16(hash) + chunk_suffix});
    p.bytes += chunk_file_bytes(layout_);
  }
  for (std::size_t i = 0; i < w.anchors.size(); ++i) {
    const std::size_t line = w.anchors[i].line;
    if (line == 0 || line % grid_ != 0 || line > w.tokens.size()) continue;
    const std::vector<std::uint64_t> chain = chunk_hashes(w.tokens, line, grid_);
    const std::uint64_t id = anchor_id(w.ns, chain.back());
    if (anchors_.count(id) != 0 || in_flight_.count(id) != 0) continue;
    if (!std::all_of(chain.begin(), chain.end(),
                     [&](std::uint64_t h) { return known_chunk(h) || planned.count(h) != 0; }))
      continue;
    p.files.push_back({true, false, line, i, anchor_dir(w.ns), anchor_prefix + hex16(chain.back()) + anchor_suffix});
    p.bytes += anchor_file_bytes(layout_, line);
  }
  // Never evict the chunks this write stands on (its chain's, closed under parents).
  std::unordered_set<std::uint64_t> keep;
  std::size_t top = 0;
  for (const auto& f : p.files) top = std::max(top, f.line);
  if (top > 0)
    for (std::uint64_t h : chunk_hashes(w.tokens, top, grid_))
      if (chunks_.count(h) != 0) keep.insert(h);
  make_room(p, keep);
  if (p.refused) return p;
  for (const auto& f : p.files) {
    const std::uint64_t key = prefix_hash(w.tokens.data(), f.line);
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
  for (std::size_t i = 0; i < plan.files.size(); ++i) {
    const disk_file_job& f = plan.files[i];
    if (f.checkpoint) {
      if (i < results.size()) commit_checkpoint(f, *plan.checkpoint, plan.epoch, results[i], r);
      continue;
    }
    const std::uint64_t key = prefix_hash(w.tokens.data(), f.line);
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
      chain = chunk_hashes(w.tokens, f.line, grid_);
      usable = usable && chain_indexed(chain) && anchors_.count(id) == 0;
    } else {
      parent = f.line > grid_ ? prefix_hash(w.tokens.data(), f.line - grid_) : 0;
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

void disk_store::commit_checkpoint(const disk_file_job& f, const checkpoint_meta& meta, std::uint64_t epoch,
                                   const disk_file_result& result, disk_write_report& r) {
  const std::string path = join_path(f.dir, f.name);
  if (!result.ok) {
    r.failed = true;
    r.error = result.error;
    ++write_failures_;
    warn_once(result.error);
    if (paths_.count(checkpoint_id(f.name)) == 0) env_.remove(path);
    return;
  }
  if (epoch != epoch_) {
    env_.remove(path);
    return;
  }
  const std::uint64_t id = checkpoint_id(f.name);
  if (checkpoints_.count(id) == 0) {
    eviction_entry e;
    e.bytes = result.bytes;
    e.tokens_saved = f.line;
    e.last_use_s = clock_.now_s();
    eviction_->add(id, e);
  }
  checkpoints_[id] = checkpoint_entry{meta.key_hash, f.line, result.bytes};
  paths_[id] = path;
  r.bytes_written += result.bytes;
  bytes_written_ += result.bytes;
  ++files_written_;
  // Renamed and durable: the older points of the same generation go now, not before.
  std::vector<std::uint64_t> older;
  for (const auto& [oid, c] : checkpoints_)
    if (oid != id && c.key_hash == meta.key_hash && c.rows < f.line) older.push_back(oid);
  for (std::uint64_t oid : older) {
    drop(oid);
    ++r.superseded;
    ++superseded_;
  }
}

disk_write_plan disk_store::prepare_checkpoint(const staged_write& w, const checkpoint_meta& meta) {
  disk_write_plan p;
  p.epoch = epoch_;
  const std::size_t rows = meta.tokens.empty() ? 0 : meta.tokens.size() - 1;
  if (rows == 0 || w.anchors.size() != 1 || w.anchors[0].line != rows || w.row_lo != 0 || w.row_hi != rows) {
    p.refused = true;
    p.error = "a checkpoint needs its whole state staged";
    ++refusals_;
    return p;
  }
  p.checkpoint = meta;
  p.files.push_back({false, true, rows, 0, folder_, checkpoint_name(meta.key_hash, rows)});
  p.bytes = checkpoint_file_bytes(layout_, meta.tokens.size());
  make_room(p, {});
  return p;
}

bool disk_store::store_checkpoint(const checkpoint_meta& meta, const state_adapter& from) {
  const std::size_t rows = from.valid_length();
  if (meta.tokens.size() != rows + 1)
    throw std::invalid_argument("disk_store::store_checkpoint: the state is at " + std::to_string(rows) +
                                ", the checkpoint has " + std::to_string(meta.tokens.size()) + " ids");
  staged_write w;
  w.tokens = meta.tokens;
  stage_rows(w, from, 0, rows);
  w.anchors.push_back(stage_sections(from, rows));
  const disk_write_plan plan = prepare_checkpoint(w, meta);
  const disk_write_report r = commit(w, plan, execute_disk_write(env_, layout_, w, plan));
  return !r.refused && !r.failed && checkpoints_.count(checkpoint_id(checkpoint_name(meta.key_hash, rows))) != 0;
}

std::optional<disk_store::checkpoint_hit> disk_store::find_checkpoint(std::uint64_t key_hash) const {
  std::optional<checkpoint_hit> best;
  for (const auto& [id, c] : checkpoints_)
    if (c.key_hash == key_hash && (!best || c.rows > best->rows)) best = checkpoint_hit{c.key_hash, c.rows, c.bytes};
  return best;
}

disk_store::restore_result disk_store::restore_checkpoint(const checkpoint_hit& hit, const std::vector<token_id>& prompt,
                                                          state_adapter& into, checkpoint_meta& meta) {
  restore_result res;
  const std::uint64_t id = checkpoint_id(checkpoint_name(hit.key_hash, hit.rows));
  auto it = checkpoints_.find(id);
  if (it == checkpoints_.end()) {
    res.error = "no such checkpoint";
    return res;
  }
  const std::string path = paths_.at(id);
  std::vector<unsigned char> buf(it->second.bytes);
  const file_result fr = env_.read(path, 0, buf.data(), buf.size());
  auto d = fr ? decode_checkpoint(buf, layout_, prompt, hit.key_hash)
              : decode_result<checkpoint_read>::failure(df::fault::truncated, fr.message);
  if (!d.ok()) {
    ++restore_failures_;
    drop(id);
    res.error = path + ": " + d.error;
    return res;
  }
  apply_checkpoint(into, d.value);
  meta = std::move(d.value.meta);
  res.ok = true;
  res.bytes_read = buf.size();
  bytes_read_ += buf.size();
  ++hits_;
  eviction_->touch(id);
  env_.set_modified_s(path, clock_.now_s());
  return res;
}

std::size_t disk_store::remove_checkpoints(std::uint64_t key_hash) {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, c] : checkpoints_)
    if (c.key_hash == key_hash) ids.push_back(id);
  std::size_t n = 0;
  for (std::uint64_t id : ids) n += drop(id);
  return n;
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

// ---- Lookups ----------------------------------------------------------------------------------

std::optional<disk_hit> disk_store::find(const std::vector<token_id>& prompt, const std::string& ns) const {
  if (prompt.size() < 2 || !valid_ns(ns) || anchors_.empty()) return std::nullopt;
  const std::size_t top = (prompt.size() - 1) / grid_ * grid_;
  if (top == 0) return std::nullopt;
  const std::vector<std::uint64_t> hashes = chunk_hashes(prompt, top, grid_);
  for (std::size_t i = hashes.size(); i-- > 0;) {
    auto it = anchors_.find(anchor_id(ns, hashes[i]));
    if (it == anchors_.end() || it->second.ns != ns || !chain_indexed(it->second.chain)) continue;
    disk_hit h;
    h.ns = ns;
    h.line = it->second.line;
    h.read_bytes = it->second.bytes;
    for (std::uint64_t c : it->second.chain) h.read_bytes += chunks_.at(c).bytes;
    return h;
  }
  return std::nullopt;
}

std::optional<disk_hit> disk_store::find_exact(const std::vector<token_id>& tokens, const std::string& ns) const {
  const std::size_t n = tokens.size();
  if (n == 0 || n % grid_ != 0 || !valid_ns(ns)) return std::nullopt;
  auto it = anchors_.find(anchor_id(ns, prefix_hash(tokens.data(), n)));
  if (it == anchors_.end() || it->second.ns != ns || it->second.line != n || !chain_indexed(it->second.chain))
    return std::nullopt;
  disk_hit h;
  h.ns = ns;
  h.line = n;
  h.read_bytes = it->second.bytes;
  for (std::uint64_t c : it->second.chain) h.read_bytes += chunks_.at(c).bytes;
  return h;
}

bool disk_store::has_durable_prefix(const std::vector<token_id>& tokens, const std::string& ns) const {
  return find_exact(tokens, ns).has_value();
}

std::size_t disk_store::longest_durable_prefix_tokens() const {
  std::size_t best = 0;
  for (const auto& [id, a] : anchors_)
    if (a.line > best && chain_indexed(a.chain)) best = a.line;
  return best;
}

std::size_t disk_store::entries() const { return anchors_.size(); }

std::vector<std::vector<token_id>> disk_store::token_prefixes() {
  std::vector<std::vector<token_id>> out;
  const std::size_t hb = df::chunk_fixed_bytes + layout_.views.size() * df::entry_bytes;
  std::vector<unsigned char> block(grid_ * df::token_bytes);
  for (const auto& [id, a] : anchors_) {
    if (!chain_indexed(a.chain)) continue;
    std::vector<token_id> tokens;
    tokens.reserve(a.line);
    bool ok = true;
    for (std::uint64_t c : a.chain) {
      if (!env_.read(paths_.at(c), hb, block.data(), block.size())) {
        ok = false;
        break;
      }
      for (std::size_t i = 0; i < grid_; ++i)
        tokens.push_back(static_cast<token_id>(get_u32(block.data() + i * df::token_bytes)));
    }
    if (ok) out.push_back(std::move(tokens));
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return x.size() < y.size() || (x.size() == y.size() && x < y);
  });
  return out;
}

// ---- Restore ----------------------------------------------------------------------------------

disk_store::restore_result disk_store::restore(const disk_hit& hit, const std::vector<token_id>& prompt,
                                               state_adapter& into) {
  restore_result res;
  if (hit.line == 0 || hit.line % grid_ != 0 || prompt.size() < hit.line) {
    res.error = "no anchor at line " + std::to_string(hit.line) + " for this prompt";
    return res;
  }
  const std::uint64_t key = prefix_hash(prompt.data(), hit.line);
  const std::uint64_t aid = anchor_id(hit.ns, key);
  auto it = anchors_.find(aid);
  if (it == anchors_.end() || !chain_indexed(it->second.chain)) {
    res.error = "the anchor at line " + std::to_string(hit.line) + " is not on disk";
    return res;
  }
  const std::vector<std::uint64_t> chain = it->second.chain;
  auto failed = [&](std::uint64_t id, const std::string& what) {
    ++restore_failures_;
    drop(id);
    res.ok = false;
    res.error = what;
    return res;
  };

  // Every file read and verified before anything is applied. The reads run one file ahead of
  // the checks, on a helper thread (which alone uses the env meanwhile), so the crc work
  // overlaps the I/O; the views point into the buffers read, applied once all passed.
  struct file_ref {
    std::uint64_t id;
    std::string path;
    std::size_t bytes;
  };
  std::vector<file_ref> files;
  for (std::uint64_t c : chain) files.push_back({c, paths_.at(c), static_cast<std::size_t>(chunks_.at(c).bytes)});
  files.push_back({aid, paths_.at(aid), static_cast<std::size_t>(it->second.bytes)});
  struct read_buffer {
    std::unique_ptr<unsigned char[]> data;
    file_result result;
  };
  auto read_one = [this](const file_ref& f) {
    read_buffer b;
    b.data.reset(new unsigned char[std::max<std::size_t>(f.bytes, 1)]);
    b.result = env_.read(f.path, 0, b.data.get(), f.bytes);
    return b;
  };
  std::vector<read_buffer> buffers(files.size());
  std::vector<chunk_view> views;
  views.reserve(chain.size());
  anchor_view anchor;
  std::future<read_buffer> ahead = std::async(std::launch::async, read_one, std::cref(files[0]));
  for (std::size_t i = 0; i < files.size(); ++i) {
    buffers[i] = ahead.get();
    if (i + 1 < files.size()) ahead = std::async(std::launch::async, read_one, std::cref(files[i + 1]));
    auto stop = [&](const std::string& what) {
      if (ahead.valid()) ahead.wait();  // the env is ours again before anything is deleted
      return failed(files[i].id, what);
    };
    if (!buffers[i].result) return stop(buffers[i].result.message);
    res.bytes_read += files[i].bytes;
    const unsigned char* d = buffers[i].data.get();
    if (i < chain.size()) {
      auto v = verify_chunk(d, files[i].bytes, layout_, prompt, (i + 1) * grid_);
      if (!v.ok()) return stop(files[i].path + ": " + v.error);
      views.push_back(std::move(v.value));
    } else {
      auto v = verify_anchor(d, files[i].bytes, layout_, chain);
      if (!v.ok()) return stop(files[i].path + ": " + v.error);
      anchor = std::move(v.value);
    }
  }
  for (const auto& v : views) apply_chunk(into, v);
  apply_anchor(into, anchor, hit.line);
  bytes_read_ += res.bytes_read;
  ++hits_;
  // The last use outlives the process: it is the files' modification time.
  const std::int64_t now = clock_.now_s();
  eviction_->touch(aid);
  env_.set_modified_s(files.back().path, now);
  for (std::uint64_t c : chain) {
    eviction_->touch(c);
    env_.set_modified_s(paths_.at(c), now);
  }
  res.ok = true;
  return res;
}

// ---- Maintenance ------------------------------------------------------------------------------

std::size_t disk_store::evict_to_cap() {
  const std::uint64_t free = env_.free_bytes(folder_).value_or(~std::uint64_t{0} / 2);
  std::size_t n = 0;
  for (std::uint64_t id : eviction_->plan_evictions(free))
    if (eviction_->contains(id)) n += drop(id);
  evictions_ += static_cast<long>(n);
  return n;
}

std::size_t disk_store::clear() {
  std::size_t n = 0;
  for (const auto& [id, path] : paths_)
    if (env_.remove(path)) ++n;
  // Whatever else of ours is there (orphans, tmp files); other names are left alone.
  for (const std::string& name : env_.list(folder_)) {
    const std::string path = join_path(folder_, name);
    if (is_tmp_name(name) || name_hash(name, chunk_prefix, chunk_suffix) || parse_checkpoint_name(name)) {
      if (env_.remove(path)) ++n;
    } else if (starts_with(name, ns_prefix)) {
      for (const std::string& a : env_.list(path))
        if ((is_tmp_name(a) || name_hash(a, anchor_prefix, anchor_suffix)) && env_.remove(join_path(path, a))) ++n;
    }
  }
  chunks_.clear();
  anchors_.clear();
  checkpoints_.clear();
  paths_.clear();
  ++epoch_;
  eviction_ = std::make_unique<disk_eviction>(clock_, options_.eviction);
  return n;
}

nlohmann::json disk_store::stats() const {
  return {
      {"entries", entries()},
      {"chunks", chunks_.size()},
      {"checkpoints", checkpoints_.size()},
      {"bytes", eviction_->held_bytes()},
      {"limit_bytes", options_.eviction.budget_bytes},
      {"longest_prefix", longest_durable_prefix_tokens()},
      {"hits", hits_},
      {"restore_failures", restore_failures_},
      {"write_failures", write_failures_},
      {"refusals", refusals_},
      {"evictions", evictions_},
      {"superseded", superseded_},
      {"files_written", files_written_},
      {"bytes_written", bytes_written_},
      {"bytes_read", bytes_read_},
      {"folder", folder_},
  };
}

}  // namespace anchorage
