// The spill store's start-up recovery: reap, sweep foreign and damaged files, read every
// manifest, drop the ones naming a missing file, remove the files no manifest names, and
// rebuild the catalog with each manifest's last use from its file's modification time.
#include <algorithm>
#include <map>
#include <optional>

#include "runtime/spill/spill_codec.hpp"
#include "runtime/spill/spill_store.hpp"
#include "runtime/store/record_file.hpp"

namespace anchorage {
namespace {

namespace sf = spill_format;

// A header's tables hold at most this many entries: a larger header_bytes is damage.
std::size_t max_header(std::size_t fixed) { return fixed + sf::max_table_entries * sf::sum_entry_bytes; }

template <class Entry>
std::vector<spill_sum> sums_of(const std::vector<Entry>& entries) {
  std::vector<spill_sum> out;
  for (const auto& e : entries) out.push_back({e.s0, e.s1});
  return out;
}

}  // namespace

spill_store::file_check spill_store::check_block(const std::string& path, std::uint64_t name,
                                                 found_file& out) const {
  auto bytes =
      store::read_record_header(env_, path, sf::block_fixed_bytes, max_header(sf::block_fixed_bytes));
  auto h = bytes ? read_spill_block_header(bytes->data(), bytes->size())
                 : spill_decode<sf::block_header>::failure(sf::fault::truncated, "header");
  if (h.ok() && !spill_foreign_block(h.value, layout_).empty()) return file_check::foreign;
  if (!h.ok() || h.value.name != name || env_.size(path) != h.value.file_bytes ||
      h.value.file_bytes != spill_block_file_bytes(layout_, h.value.a, h.value.b))
    return file_check::damaged;
  out = {path, h.value.file_bytes, h.value.a, h.value.b, false, sums_of(h.value.views)};
  return file_check::ok;
}

spill_store::file_check spill_store::check_anchor(const std::string& path, std::uint64_t name,
                                                  found_file& out) const {
  auto bytes =
      store::read_record_header(env_, path, sf::anchor_fixed_bytes, max_header(sf::anchor_fixed_bytes));
  auto h = bytes ? read_spill_anchor_header(bytes->data(), bytes->size())
                 : spill_decode<sf::anchor_header>::failure(sf::fault::truncated, "header");
  if (h.ok() && !spill_foreign_anchor(h.value, layout_).empty()) return file_check::foreign;
  if (!h.ok() || h.value.name != name || env_.size(path) != h.value.file_bytes ||
      h.value.file_bytes != spill_anchor_file_bytes(layout_))
    return file_check::damaged;
  out = {path, h.value.file_bytes, h.value.at, 0, h.value.end, sums_of(h.value.sections)};
  return file_check::ok;
}

spill_scan_report spill_store::scan() {
  spill_scan_report r;
  index_.clear();
  plans_.clear();
  if (!env_.make_dir(folder_)) return r;

  std::map<std::uint64_t, found_file> blocks, anchors;
  struct found_manifest {
    spill_manifest m;
    std::vector<unsigned char> encoded;
    std::int64_t mtime = 0;
  };
  std::vector<found_manifest> manifests;
  auto sweep = [&](const std::string& path, std::size_t& counter) {
    env_.remove(path);
    ++counter;
  };

  for (const std::string& name : env_.list(folder_)) {
    const std::string path = join_path(folder_, name);
    std::uint64_t v = 0;
    if (is_tmp_name(name)) {
      sweep(path, r.tmp_reaped);
    } else if (parse_spill_block_file(name, v)) {
      found_file f;
      const file_check c = check_block(path, v, f);
      if (c == file_check::ok)
        blocks[v] = std::move(f);
      else
        sweep(path, c == file_check::foreign ? r.foreign : r.damaged);
    } else if (parse_spill_anchor_file(name, v)) {
      found_file f;
      const file_check c = check_anchor(path, v, f);
      if (c == file_check::ok)
        anchors[v] = std::move(f);
      else
        sweep(path, c == file_check::foreign ? r.foreign : r.damaged);
    } else if (parse_spill_manifest_file(name, v)) {
      const std::optional<std::uint64_t> size = env_.size(path);
      std::vector<unsigned char> bytes;
      bool read = false;
      if (size && *size <= sf::manifest_fixed_bytes + sf::max_manifest_bytes) {
        bytes.resize(static_cast<std::size_t>(*size));
        read = static_cast<bool>(env_.read(path, 0, bytes.data(), bytes.size()));
      }
      auto d = read ? decode_spill_manifest(bytes.data(), bytes.size(), layout_, v)
                    : spill_decode<spill_manifest>::failure(sf::fault::truncated, "unreadable");
      if (d.fault == sf::fault::foreign_engine) {
        sweep(path, r.foreign);
      } else if (!d.ok()) {
        sweep(path, r.damaged);
      } else {
        manifests.push_back({std::move(d.value), std::move(bytes), env_.modified_s(path).value_or(0)});
      }
    }
    // Other names are not ours: left alone.
  }

  // A manifest stands when every file it names is there, in its place, with its sums.
  std::vector<found_manifest*> standing;
  for (auto& fm : manifests) {
    bool whole = true;
    for (const auto& b : fm.m.blocks) {
      auto it = blocks.find(b.name);
      whole = whole && it != blocks.end() && it->second.a == b.a && it->second.b == b.b &&
              it->second.sums == b.sums;
    }
    for (const auto& a : fm.m.anchors) {
      auto it = anchors.find(a.name);
      whole = whole && it != anchors.end() && it->second.a == a.at && it->second.end == a.end &&
              it->second.sums == a.sums;
    }
    if (whole) {
      standing.push_back(&fm);
    } else {
      sweep(manifest_path(fm.m.id), r.damaged);
    }
  }

  for (const auto& [name, f] : blocks) index_.add_file({spill_file_kind::block, name}, f.bytes, true);
  for (const auto& [name, f] : anchors) index_.add_file({spill_file_kind::anchor, name}, f.bytes, true);
  // Oldest use first: the order of the counters is the order of the mtimes, then of the spills.
  std::sort(standing.begin(), standing.end(), [](const found_manifest* x, const found_manifest* y) {
    if (x->mtime != y->mtime) return x->mtime < y->mtime;
    if (x->m.sequence != y->m.sequence) return x->m.sequence < y->m.sequence;
    return x->m.id < y->m.id;
  });
  use_clock_ = 0;
  last_stamp_ = 0;
  for (found_manifest* fm : standing) {
    last_stamp_ = std::max(last_stamp_, fm->mtime);
    index_.install(std::move(fm->m), std::move(fm->encoded), ++use_clock_);
  }

  // Blocks and anchors no manifest names: a spill that crashed before its manifest, or the
  // files of a manifest dropped above.
  std::vector<spill_file_key> orphans;
  for (const auto& [name, f] : blocks)
    if (index_.dead({spill_file_kind::block, name})) orphans.push_back({spill_file_kind::block, name});
  for (const auto& [name, f] : anchors)
    if (index_.dead({spill_file_kind::anchor, name})) orphans.push_back({spill_file_kind::anchor, name});
  r.orphans = delete_files(orphans);

  r.manifests = index_.manifest_count();
  r.blocks = index_.present_count(spill_file_kind::block);
  r.anchors = index_.present_count(spill_file_kind::anchor);
  counts_.scan_damaged += r.damaged;
  counts_.scan_foreign += r.foreign;
  return r;
}

}  // namespace anchorage
