#include "runtime/disk/disk_store.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/core/log.hpp"
#include "runtime/disk/disk_codec.hpp"

namespace anchorage {

namespace {

disk_write_limits limits_of(const disk_store_options& o) {
  return {o.eviction.budget_bytes, o.entry_max_bytes, o.eviction.min_free_bytes};
}

std::size_t grid_of(const state_layout& layout) {
  if (layout.grid == 0) throw std::invalid_argument("disk_store: a layout without a grid");
  return static_cast<std::size_t>(layout.grid);
}

}  // namespace

disk_store::disk_store(file_env& env, const state_layout& layout, const eviction_clock& clock,
                       disk_store_options options)
    : env_(env),
      layout_(layout),
      clock_(clock),
      options_(std::move(options)),
      grid_(grid_of(layout_)),
      names_(options_.dir, layout_.fingerprint),
      index_(grid_, clock_, options_.eviction),
      planner_(layout_, names_, index_, limits_of(options_)),
      reader_(env_, layout_),
      scanner_(env_, layout_, names_) {}

disk_scan_report disk_store::scan() { return scanner_.scan(index_, clock_.now_s()); }

std::size_t disk_store::adopt(const std::vector<std::string>& chunk_paths, const std::string& ns,
                              const std::string& anchor_path) {
  const std::size_t n = scanner_.adopt(index_, chunk_paths, ns, anchor_path, clock_.now_s());
  evict_to_cap();
  return n;
}

void disk_store::warn_once(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  log_warn() << "the disk tier could not write (" << what
             << "); serving goes on without it for that file (further failures are counted, not printed)";
}

std::size_t disk_store::drop(std::uint64_t id) {
  std::size_t n = 0;
  for (const std::string& path : index_.remove(id)) {
    env_.remove(path);
    ++n;
  }
  return n;
}

// ---- Lookups ----------------------------------------------------------------------------------

std::vector<std::vector<token_id>> disk_store::token_prefixes() {
  std::vector<std::vector<token_id>> out;
  for (const disk_anchor_entry* a : index_.usable_anchors()) {
    std::vector<std::string> paths;
    for (std::uint64_t c : a->chain) paths.push_back(*index_.path(c));
    if (auto tokens = reader_.read_chain_tokens(paths, a->line)) out.push_back(std::move(*tokens));
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return x.size() < y.size() || (x.size() == y.size() && x < y);
  });
  return out;
}

// ---- Restore ----------------------------------------------------------------------------------

expected<disk_restore> disk_store::restore(const disk_hit& hit, const std::vector<token_id>& prompt,
                                           state_adapter& into) {
  auto read = read_verified(hit, prompt);
  if (!read) return read.error();
  apply_verified(*read, into);
  return disk_restore{read->bytes_read};
}

expected<verified_read> disk_store::read_verified(const disk_hit& hit, const std::vector<token_id>& prompt,
                                                  bool* damaged) {
  if (hit.line == 0 || prompt.size() < hit.line) {
    ++counts_.restore_failure_reasons.missing;
    return status::failure("no anchor at line " + std::to_string(hit.line) + " for this prompt");
  }
  const std::uint64_t aid = disk_names::anchor_id(hit.ns, prefix_hash(prompt.data(), hit.line));
  const disk_anchor_entry* a = index_.anchor(aid);
  if (!a || a->line != hit.line || !index_.chain_indexed(a->chain)) {
    ++counts_.restore_failure_reasons.missing;
    return status::failure("the anchor at line " + std::to_string(hit.line) + " is not on disk");
  }
  const std::vector<std::uint64_t> chain = a->chain;
  std::vector<std::uint64_t> ids = chain;
  ids.push_back(aid);
  std::vector<disk_read_file> files;
  for (std::uint64_t c : chain)
    files.push_back({*index_.path(c), static_cast<std::size_t>(index_.chunk(c)->bytes)});
  files.push_back({*index_.path(aid), static_cast<std::size_t>(a->bytes)});

  disk_read_failure failure;
  auto read = reader_.read_anchor(files, prompt, chain, hit.line, failure);
  if (!read) {
    if (failure.gone) {  // deleted under the index: gone, as if evicted
      ++counts_.restore_failure_reasons.missing;
    } else {
      counts_.restore_failure_reasons.count(failure.fault);
      if (damaged) *damaged = true;
    }
    drop(ids[failure.file]);
    return read.error();
  }
  counts_.bytes_read += read->bytes_read();
  ++counts_.hits;
  // The last use outlives the process: it is the files' modification time.
  const std::int64_t now = clock_.now_s();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    index_.touch(ids[i]);
    env_.set_modified_s(files[i].path, now);
  }
  verified_read out;
  out.line = hit.line;
  out.bytes_read = read->bytes_read();
  out.anchor = std::move(*read);
  return out;
}

// ---- Maintenance ------------------------------------------------------------------------------

std::size_t disk_store::evict_to_cap() {
  const std::uint64_t free = env_.free_bytes(folder()).value_or(~std::uint64_t{0} / 2);
  std::size_t n = 0;
  for (std::uint64_t id : index_.plan_evictions(free))
    if (index_.contains(id)) n += drop(id);
  counts_.evictions += static_cast<long>(n);
  return n;
}

std::size_t disk_store::set_eviction(const disk_eviction_options& o) {
  options_.eviction = o;
  index_.set_eviction_options(o);
  planner_.set_limits(limits_of(options_));
  return evict_to_cap();
}

std::size_t disk_store::clear() {
  std::size_t n = 0;
  // Every indexed file, then whatever else of ours is there (orphans, tmp files); other names
  // are left alone.
  for (const std::string& path : index_.all_paths())
    if (env_.remove(path)) ++n;
  n += scanner_.remove_ours();
  index_.clear();
  return n;
}

disk_entry_list disk_store::list_entries(std::size_t limit) const {
  disk_entry_list out;
  const std::int64_t now = clock_.now_s();
  for (const disk_anchor_entry* a : index_.usable_anchors()) {
    const std::uint64_t id = disk_names::anchor_id(a->ns, a->chain.back());
    const eviction_entry* e = index_.eviction_record(id);
    if (e == nullptr) continue;
    disk_entry_view v;
    v.key = a->chain.back();
    v.tokens = a->line;
    v.bytes = a->read_bytes;
    v.hits = e->hits;
    v.value = index_.value(id);
    v.age_s = std::max<std::int64_t>(0, now - e->last_use_s);
    out.entries.push_back(v);
  }
  out.total = out.entries.size();
  std::sort(out.entries.begin(), out.entries.end(), [](const disk_entry_view& x, const disk_entry_view& y) {
    return x.value != y.value ? x.value > y.value : x.key < y.key;
  });
  if (out.entries.size() > limit) out.entries.resize(limit);
  return out;
}

disk_stats disk_store::stats() const {
  disk_stats s = counts_;  // the counters; what the index holds now below
  s.entries = entries();
  s.chunks = index_.chunk_count();
  s.checkpoints = index_.checkpoint_count();
  s.bytes = index_.held_bytes();
  s.limit_bytes = options_.eviction.budget_bytes;
  s.lifetime_s = options_.eviction.lifetime_s;
  s.min_free_bytes = options_.eviction.min_free_bytes;
  s.fs_free_bytes = env_.free_bytes(folder()).value_or(0);
  s.longest_prefix = longest_durable_prefix_tokens();
  s.restore_failures = s.restore_failure_reasons.total();
  s.anchored_bytes = index_.anchored_bytes();
  const std::uint64_t stood_on = index_.anchor_files_bytes();
  s.dedup_ratio = stood_on == 0 ? 0.0 : static_cast<double>(s.anchored_bytes) / static_cast<double>(stood_on);
  s.folder = folder();
  return s;
}

}  // namespace anchorage
