// The spill store's façade: construction, the catalog, maintenance and stats. Writes:
// spill_store_write.cpp; reads: spill_store_read.cpp; start-up recovery: spill_scan.cpp.
#include "runtime/spill/spill_store.hpp"

#include <algorithm>
#include <ctime>
#include <stdexcept>

#include "protocol/spill_format.hpp"
#include "runtime/core/log.hpp"
#include "runtime/spill/spill_codec.hpp"

namespace anchorage {
namespace {

std::string hex16(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

}  // namespace

spill_store::spill_store(file_env& env, const state_layout& layout, spill_store_options opts)
    : env_(env),
      layout_(layout),
      opts_(std::move(opts)),
      folder_(join_path(join_path(opts_.dir, hex16(layout_.fingerprint)), spill_format::folder_name)) {
  if (layout_.grid <= 0) throw std::invalid_argument("spill_store: a layout without a grid");
}

std::string spill_store::path_of(const spill_file_key& k) const {
  return join_path(folder_,
                   k.kind == spill_file_kind::block ? spill_block_file(k.name) : spill_anchor_file(k.name));
}

std::vector<std::string> spill_store::paths_of(std::uint64_t id) const {
  std::vector<std::string> out;
  const spill_index::manifest_entry* e = index_.find(id);
  if (!e) return out;
  for (const spill_file_key& k : e->files) out.push_back(path_of(k));
  out.push_back(manifest_path(id));
  return out;
}

std::string spill_store::manifest_path(std::uint64_t id) const {
  return join_path(folder_, spill_manifest_file(id));
}

std::size_t spill_store::delete_files(const std::vector<spill_file_key>& dead) {
  std::size_t n = 0;
  for (const auto& k : dead) {
    if (!index_.dead(k)) continue;  // a later step of the same operation took it up again
    env_.remove(path_of(k));
    index_.erase_file(k);
    ++n;
  }
  return n;
}

void spill_store::drop_manifest(std::uint64_t id) {
  if (!index_.find(id)) return;
  const std::vector<spill_file_key> dead = index_.remove_manifest(id);
  env_.remove(manifest_path(id));
  delete_files(dead);
}

std::int64_t spill_store::next_stamp() {
  // At least the wall time, and strictly after the last stamp given: the order of last uses
  // survives a restart even when several fall in one second.
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  last_stamp_ = std::max(now, last_stamp_ + 1);
  return last_stamp_;
}

void spill_store::touch(std::uint64_t id) {
  if (!index_.find(id)) return;
  index_.set_last_use(id, ++use_clock_);
  env_.set_modified_s(manifest_path(id), next_stamp());
}

void spill_store::warn_once(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  log_warn() << "the session spill could not write (" << what
             << "); the conversation's previous spill stays (further failures are counted, not printed)";
}

// ---- The catalog ------------------------------------------------------------------------------

bool spill_store::has_block(std::uint64_t name) const { return index_.held({spill_file_kind::block, name}); }
bool spill_store::has_anchor(std::uint64_t name) const {
  return index_.held({spill_file_kind::anchor, name});
}

std::vector<const spill_manifest*> spill_store::manifests() const {
  std::vector<const spill_manifest*> out;
  const auto lru = index_.by_last_use();
  for (auto it = lru.rbegin(); it != lru.rend(); ++it) out.push_back(&(*it)->manifest);
  return out;
}

const spill_manifest* spill_store::find(std::uint64_t id) const {
  const auto* e = index_.find(id);
  return e ? &e->manifest : nullptr;
}

std::uint64_t spill_store::read_bytes(std::uint64_t id) const {
  const auto* e = index_.find(id);
  if (!e) return 0;
  std::uint64_t n = e->encoded.size();
  for (const auto& k : e->files)
    if (const auto* f = index_.file(k)) n += f->bytes;
  return n;
}

std::size_t spill_store::manifest_count() const { return index_.manifest_count(); }
std::size_t spill_store::block_count() const { return index_.present_count(spill_file_kind::block); }
std::uint64_t spill_store::total_bytes() const { return index_.held_bytes(); }

// ---- Maintenance ------------------------------------------------------------------------------

bool spill_store::remove(std::uint64_t id) {
  if (!index_.find(id)) return false;
  drop_manifest(id);
  return true;
}

std::size_t spill_store::clear() {
  std::size_t n = 0;
  std::uint64_t v = 0;
  for (const std::string& name : env_.list(folder_)) {
    const bool ours = is_tmp_name(name) || parse_spill_block_file(name, v) ||
                      parse_spill_anchor_file(name, v) || parse_spill_manifest_file(name, v);
    if (!ours) continue;
    // A file a prepared write is writing is left to its commit (which, from an older epoch,
    // installs nothing and deletes what no newer write relies on).
    const bool in_flight = (parse_spill_block_file(name, v) && index_.held({spill_file_kind::block, v}) &&
                            !index_.present({spill_file_kind::block, v})) ||
                           (parse_spill_anchor_file(name, v) && index_.held({spill_file_kind::anchor, v}) &&
                            !index_.present({spill_file_kind::anchor, v}));
    // A tmp may be a write in flight on the writer's env; with none in flight it is an orphan.
    if (in_flight || (is_tmp_name(name) && !plans_.empty())) continue;
    if (env_.remove(join_path(folder_, name))) ++n;
  }
  index_.clear_present();
  ++epoch_;
  return n;
}

spill_store_stats spill_store::stats() const {
  spill_store_stats s = counts_;
  s.manifests = index_.manifest_count();
  s.blocks = index_.present_count(spill_file_kind::block);
  s.anchors = index_.present_count(spill_file_kind::anchor);
  s.bytes = index_.held_bytes();
  s.bytes_in_flight = index_.in_flight_bytes();
  s.limit_bytes = opts_.budget_bytes;
  s.writes_in_flight = plans_.size();
  const auto held = index_.by_last_use();  // least recently used first
  for (auto it = held.rbegin(); it != held.rend() && s.conversations.size() < s.conversations_listed; ++it) {
    const spill_manifest& m = (*it)->manifest;
    spill_conversation_view v;
    v.id = hex16(m.id);
    v.session = m.session_key;
    v.tokens = m.tokens.size();
    v.bytes = (*it)->encoded.size();
    for (const spill_file_key& k : (*it)->files)
      if (const auto* f = index_.file(k)) v.bytes += f->bytes;
    v.end_anchor = m.end ? m.end->at : 0;
    v.resident = m.resident;
    v.spilled_unix_s = static_cast<double>(m.sequence) / 1e9;
    s.conversations.push_back(std::move(v));
  }
  return s;
}

}  // namespace anchorage
