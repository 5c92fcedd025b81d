// A conversation whose files another owner put in the folder (the remote level's fetch),
// checked and indexed as the start-up scan would, without a scan.
#include <vector>

#include "runtime/spill/spill_codec.hpp"
#include "runtime/spill/spill_store.hpp"

namespace anchorage {

bool spill_store::adopt(std::uint64_t id, const std::vector<unsigned char>& encoded,
                        const std::vector<std::string>& written, std::string& why) {
  // The files `written` that no manifest names (nor a prepared write) go again on a refusal.
  auto refuse = [&](std::string what) {
    for (const std::string& name : written) {
      std::uint64_t v = 0;
      spill_file_key k;
      if (parse_spill_block_file(name, v))
        k = {spill_file_kind::block, v};
      else if (parse_spill_anchor_file(name, v))
        k = {spill_file_kind::anchor, v};
      else
        continue;
      if (!index_.held(k)) env_.remove(join_path(folder_, name));
    }
    why = std::move(what);
    return false;
  };
  auto decoded = decode_spill_manifest(encoded.data(), encoded.size(), layout_, id);
  if (!decoded.ok()) return refuse("its manifest failed its checks");
  spill_manifest m = std::move(decoded.value);
  for (const auto& [pid, st] : plans_)
    if (st.id == id) return refuse("a spill of the conversation is being written here");
  const spill_index::manifest_entry* old = index_.find(id);
  if (old && old->manifest.sequence >= m.sequence) return refuse("the conversation held here is as new");

  // Every file it names: held here already, or in the folder with a header that names it.
  struct adding {
    spill_file_key key;
    std::uint64_t bytes;
  };
  std::vector<adding> adds;
  for (const spill_block_ref& b : m.blocks) {
    const spill_file_key k{spill_file_kind::block, b.name};
    if (index_.present(k)) continue;
    if (index_.held(k)) return refuse("a block it names is being written");
    found_file f;
    if (check_block(path_of(k), b.name, f) != file_check::ok || f.a != b.a || f.b != b.b || f.sums != b.sums)
      return refuse("block " + spill_block_file(b.name) + " failed its checks");
    adds.push_back({k, f.bytes});
  }
  for (const spill_anchor_ref& a : m.anchors) {
    const spill_file_key k{spill_file_kind::anchor, a.name};
    if (index_.present(k)) continue;
    if (index_.held(k)) return refuse("an anchor it names is being written");
    found_file f;
    if (check_anchor(path_of(k), a.name, f) != file_check::ok || f.a != a.at || f.end != a.end ||
        f.sums != a.sums)
      return refuse("anchor " + spill_anchor_file(a.name) + " failed its checks");
    adds.push_back({k, f.bytes});
  }

  // Indexed and pinned before any eviction, so none deletes a file it names.
  const std::set<spill_file_key> named = spill_files_of(m);
  for (const adding& a : adds) index_.add_file(a.key, a.bytes, true);
  for (const spill_file_key& k : named) index_.pin(k);
  auto unpin_all = [&] {
    std::vector<spill_file_key> dead;
    for (const spill_file_key& k : named)
      if (index_.unpin(k)) dead.push_back(k);
    delete_files(dead);
  };
  std::size_t evicted = 0;
  if (!make_room(encoded.size(), old ? old->encoded.size() : 0, id, named, evicted)) {
    unpin_all();
    return refuse("it does not fit the spill's budget");
  }
  const file_result w =
      env_.write_atomic(folder_, spill_manifest_file(id), {{encoded.data(), encoded.size()}});
  if (!w.ok) {
    unpin_all();
    warn_once(w.message);
    return refuse("its manifest could not be written: " + w.message);
  }
  delete_files(index_.install(std::move(m), encoded, ++use_clock_));
  unpin_all();
  env_.set_modified_s(manifest_path(id), next_stamp());
  return true;
}

}  // namespace anchorage
