#include "runtime/disk/disk_store.hpp"

#include <algorithm>
#include <future>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "runtime/disk/disk_codec.hpp"
#include "runtime/disk/disk_store_detail.hpp"

namespace anchorage {

using namespace disk_store_detail;

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
  expected<verified_read> r = read_verified(hit, prompt);
  if (!r) {
    res.error = r.error().error();
    return res;
  }
  apply_verified(*r, into);
  res.ok = true;
  res.bytes_read = r->bytes_read;
  return res;
}

void disk_store::apply_verified(const verified_read& read, state_adapter& into) {
  for (const auto& v : read.chunks) apply_chunk(into, v);
  apply_anchor(into, read.anchor, read.line);
}

expected<verified_read> disk_store::read_verified(const disk_hit& hit, const std::vector<token_id>& prompt) {
  if (hit.line == 0 || hit.line % grid_ != 0 || prompt.size() < hit.line)
    return status::failure("no anchor at line " + std::to_string(hit.line) + " for this prompt");
  const std::uint64_t key = prefix_hash(prompt.data(), hit.line);
  const std::uint64_t aid = anchor_id(hit.ns, key);
  auto it = anchors_.find(aid);
  if (it == anchors_.end() || !chain_indexed(it->second.chain))
    return status::failure("the anchor at line " + std::to_string(hit.line) + " is not on disk");
  const std::vector<std::uint64_t> chain = it->second.chain;
  auto failed = [&](std::uint64_t id, const std::string& what) {
    ++restore_failures_;
    drop(id);
    return status::failure(what);
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
  verified_read out;
  out.line = hit.line;
  out.buffers.reserve(files.size());
  out.chunks.reserve(chain.size());
  std::future<read_buffer> ahead = std::async(std::launch::async, read_one, std::cref(files[0]));
  for (std::size_t i = 0; i < files.size(); ++i) {
    read_buffer buf = ahead.get();
    if (i + 1 < files.size()) ahead = std::async(std::launch::async, read_one, std::cref(files[i + 1]));
    auto stop = [&](const std::string& what) {
      if (ahead.valid()) ahead.wait();  // the env is ours again before anything is deleted
      return failed(files[i].id, what);
    };
    if (!buf.result) return stop(buf.result.message);
    out.bytes_read += files[i].bytes;
    const unsigned char* d = buf.data.get();
    out.buffers.push_back(std::move(buf.data));
    if (i < chain.size()) {
      auto v = verify_chunk(d, files[i].bytes, layout_, prompt, (i + 1) * grid_);
      if (!v.ok()) return stop(files[i].path + ": " + v.error);
      out.chunks.push_back(std::move(v.value));
    } else {
      auto v = verify_anchor(d, files[i].bytes, layout_, chain);
      if (!v.ok()) return stop(files[i].path + ": " + v.error);
      out.anchor = std::move(v.value);
    }
  }
  bytes_read_ += out.bytes_read;
  ++hits_;
  // The last use outlives the process: it is the files' modification time.
  const std::int64_t now = clock_.now_s();
  eviction_->touch(aid);
  env_.set_modified_s(files.back().path, now);
  for (std::uint64_t c : chain) {
    eviction_->touch(c);
    env_.set_modified_s(paths_.at(c), now);
  }
  return expected<verified_read>(std::move(out));
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
