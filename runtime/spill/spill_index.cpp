#include "runtime/spill/spill_index.hpp"

#include <algorithm>
#include <cassert>

namespace anchorage {

std::set<spill_file_key> spill_files_of(const spill_manifest& m) {
  std::set<spill_file_key> out;
  for (const auto& b : m.blocks) out.insert({spill_file_kind::block, b.name});
  for (const auto& a : m.anchors) out.insert({spill_file_kind::anchor, a.name});
  return out;
}

const spill_index::file_entry* spill_index::file(const spill_file_key& k) const {
  auto it = files_.find(k);
  return it == files_.end() ? nullptr : &it->second;
}

bool spill_index::present(const spill_file_key& k) const {
  const file_entry* f = file(k);
  return f && f->present;
}

bool spill_index::add_file(const spill_file_key& k, std::uint64_t bytes, bool is_present) {
  if (files_.count(k)) return false;
  file_entry e;
  e.bytes = bytes;
  e.present = is_present;
  e.pins = is_present ? 0 : 1;
  files_.emplace(k, e);
  (is_present ? held_bytes_ : in_flight_bytes_) += bytes;
  return true;
}

void spill_index::set_present(const spill_file_key& k) {
  auto it = files_.find(k);
  if (it == files_.end() || it->second.present) return;
  it->second.present = true;
  in_flight_bytes_ -= it->second.bytes;
  held_bytes_ += it->second.bytes;
}

void spill_index::erase_file(const spill_file_key& k) {
  auto it = files_.find(k);
  if (it == files_.end()) return;
  (it->second.present ? held_bytes_ : in_flight_bytes_) -= it->second.bytes;
  files_.erase(it);
}

void spill_index::pin(const spill_file_key& k) {
  auto it = files_.find(k);
  assert(it != files_.end());
  if (it != files_.end()) ++it->second.pins;
}

bool spill_index::unpin(const spill_file_key& k) {
  auto it = files_.find(k);
  if (it == files_.end()) return false;
  if (it->second.pins > 0) --it->second.pins;
  return dead(k);
}

bool spill_index::dead(const spill_file_key& k) const {
  const file_entry* f = file(k);
  return f && f->present && f->refs == 0 && f->pins == 0;
}

const spill_index::manifest_entry* spill_index::find(std::uint64_t id) const {
  auto it = manifests_.find(id);
  return it == manifests_.end() ? nullptr : &it->second;
}

std::vector<spill_file_key> spill_index::install(spill_manifest m, std::vector<unsigned char> encoded,
                                                 std::uint64_t last_use) {
  manifest_entry e;
  e.files = spill_files_of(m);
  for (const auto& k : e.files) {
    auto it = files_.find(k);
    assert(it != files_.end() && it->second.present);
    if (it != files_.end()) ++it->second.refs;
  }
  const std::uint64_t id = m.id;
  e.manifest = std::move(m);
  e.encoded = std::move(encoded);
  e.last_use = last_use;
  // The new refs first, so a file both name never looks dead.
  std::vector<spill_file_key> out = remove_manifest(id);
  held_bytes_ += e.encoded.size();
  manifests_.emplace(id, std::move(e));
  return out;
}

std::vector<spill_file_key> spill_index::remove_manifest(std::uint64_t id) {
  std::vector<spill_file_key> out;
  auto it = manifests_.find(id);
  if (it == manifests_.end()) return out;
  for (const auto& k : it->second.files) {
    auto f = files_.find(k);
    if (f == files_.end()) continue;
    if (f->second.refs > 0) --f->second.refs;
    if (dead(k)) out.push_back(k);
  }
  held_bytes_ -= it->second.encoded.size();
  manifests_.erase(it);
  return out;
}

std::vector<std::uint64_t> spill_index::manifests_naming(const spill_file_key& k) const {
  std::vector<std::uint64_t> out;
  for (const auto& [id, e] : manifests_)
    if (e.files.count(k)) out.push_back(id);
  return out;
}

void spill_index::set_last_use(std::uint64_t id, std::uint64_t last_use) {
  auto it = manifests_.find(id);
  if (it != manifests_.end()) it->second.last_use = last_use;
}

std::vector<const spill_index::manifest_entry*> spill_index::by_last_use() const {
  std::vector<const manifest_entry*> out;
  out.reserve(manifests_.size());
  for (const auto& [id, e] : manifests_) out.push_back(&e);
  std::sort(out.begin(), out.end(), [](const manifest_entry* x, const manifest_entry* y) {
    return x->last_use < y->last_use || (x->last_use == y->last_use && x->manifest.id < y->manifest.id);
  });
  return out;
}

void spill_index::clear_present() {
  manifests_.clear();
  for (auto it = files_.begin(); it != files_.end();) {
    if (it->second.present) {
      held_bytes_ -= it->second.bytes;
      it = files_.erase(it);
    } else {
      it->second.refs = 0;
      ++it;
    }
  }
  held_bytes_ = 0;
}

void spill_index::clear() {
  manifests_.clear();
  files_.clear();
  held_bytes_ = in_flight_bytes_ = 0;
}

std::size_t spill_index::present_count(spill_file_kind kind) const {
  std::size_t n = 0;
  for (const auto& [k, f] : files_)
    if (k.kind == kind && f.present) ++n;
  return n;
}

}  // namespace anchorage
