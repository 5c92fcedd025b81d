// The spill store's writes: prepare() (files, room, pins), execute_spill_write() (encoding and
// writing, no index) and commit() (indexing what was written, undoing what was not).
#include <cerrno>
#include <map>
#include <stdexcept>

#include "runtime/spill/spill_codec.hpp"
#include "runtime/spill/spill_store.hpp"

namespace anchorage {
namespace {

std::string num(std::uint64_t v) { return std::to_string(v); }

// Staged blocks and anchors: their place in the image by their index into the manifest's lists.
template <class Staged>
std::map<std::size_t, std::size_t> by_index(const std::vector<Staged>& staged) {
  std::map<std::size_t, std::size_t> out;
  for (std::size_t i = 0; i < staged.size(); ++i) out.emplace(staged[i].index, i);
  return out;
}

bool staged_block_fits(const state_layout& l, const spill_block_ref& ref, const spill_staged_block& s) {
  if (s.rows.size() != l.views.size()) return false;
  for (std::size_t v = 0; v < l.views.size(); ++v)
    if (s.rows[v].size() != (ref.b - ref.a) * l.views[v].bytes_per_token) return false;
  return true;
}

bool staged_anchor_fits(const state_layout& l, const spill_staged_anchor& s) {
  if (s.sections.size() != l.sections.size()) return false;
  for (std::size_t i = 0; i < l.sections.size(); ++i)
    if (s.sections[i].size() != l.sections[i].bytes) return false;
  return true;
}

}  // namespace

spill_write_plan spill_store::refuse(spill_write_plan p, std::string why) {
  p.files.clear();
  p.bytes = 0;
  p.refused = true;
  p.error = std::move(why);
  ++counts_.refusals;
  return p;
}

std::size_t spill_store::set_budget(std::uint64_t bytes) {
  opts_.budget_bytes = bytes;
  std::size_t evicted = 0;
  make_room(0, 0, 0, {}, evicted);
  return evicted;
}

bool spill_store::make_room(std::uint64_t need, std::uint64_t freed, std::uint64_t keep,
                            const std::set<spill_file_key>& named, std::size_t& evicted) {
  const std::uint64_t budget = opts_.budget_bytes;
  const std::uint64_t used = index_.held_bytes() + index_.in_flight_bytes() - freed;
  if (used + need <= budget) return true;
  std::set<std::uint64_t> busy;  // conversations a prepared write replaces
  for (const auto& [pid, st] : plans_) busy.insert(st.id);
  // Which manifests, least recently used first, would free enough: counted on a copy of the
  // refs, so a refusal evicts nothing.
  std::map<spill_file_key, std::size_t> refs;
  std::vector<std::uint64_t> victims;
  std::uint64_t gained = 0;
  for (const auto* e : index_.by_last_use()) {
    if (used + need <= budget + gained) break;
    const std::uint64_t id = e->manifest.id;
    if (id == keep || busy.count(id)) continue;
    victims.push_back(id);
    gained += e->encoded.size();
    for (const auto& k : e->files) {
      const auto* f = index_.file(k);
      if (!f) continue;
      auto it = refs.emplace(k, f->refs).first;
      if (it->second > 0 && --it->second == 0 && f->pins == 0 && f->present && !named.count(k))
        gained += f->bytes;
    }
  }
  if (used + need > budget + gained) return false;
  for (std::uint64_t id : victims) {
    drop_manifest(id);
    ++evicted;
    ++counts_.evictions;
  }
  return true;
}

spill_write_plan spill_store::prepare(const spill_image& image) {
  const spill_manifest& m = image.manifest;
  spill_write_plan p;
  p.plan_id = next_plan_id_++;
  p.folder = folder_;
  if (std::string e = check_spill_manifest(layout_, m); !e.empty()) return refuse(p, "a bad manifest: " + e);
  for (const auto& [pid, st] : plans_)
    if (st.id == m.id) return refuse(p, "a spill of this conversation is still in flight");

  const auto staged_blocks = by_index(image.blocks);
  const auto staged_anchors = by_index(image.anchors);
  std::set<spill_file_key> named, writing;
  std::vector<spill_file_job> jobs;
  for (std::size_t i = 0; i < m.blocks.size(); ++i) {
    const spill_block_ref& ref = m.blocks[i];
    const spill_file_key k{spill_file_kind::block, ref.name};
    if (!named.insert(k).second) continue;
    if (index_.held(k)) {
      ++p.blocks_present;
      continue;
    }
    auto s = staged_blocks.find(i);
    if (s == staged_blocks.end())
      return refuse(p, "block [" + num(ref.a) + ", " + num(ref.b) + ") is neither held nor staged");
    if (!staged_block_fits(layout_, ref, image.blocks[s->second]))
      return refuse(
          p, "block [" + num(ref.a) + ", " + num(ref.b) + ") is staged with other sizes than the layout's");
    writing.insert(k);
    jobs.push_back({spill_file_job::kind::block, s->second, spill_block_file(ref.name),
                    spill_block_file_bytes(layout_, ref.a, ref.b)});
  }
  for (std::size_t i = 0; i < m.anchors.size(); ++i) {
    const spill_anchor_ref& ref = m.anchors[i];
    const spill_file_key k{spill_file_kind::anchor, ref.name};
    if (!named.insert(k).second) continue;
    if (index_.held(k)) {
      ++p.anchors_present;
      continue;
    }
    auto s = staged_anchors.find(i);
    if (s == staged_anchors.end())
      return refuse(p, "the anchor at " + num(ref.at) + " is neither held nor staged");
    if (!staged_anchor_fits(layout_, image.anchors[s->second]))
      return refuse(p, "the anchor at " + num(ref.at) + " is staged with other sizes than the layout's");
    writing.insert(k);
    jobs.push_back({spill_file_job::kind::anchor, s->second, spill_anchor_file(ref.name),
                    spill_anchor_file_bytes(layout_)});
  }
  const std::vector<unsigned char> encoded = encode_spill_manifest(layout_, m);
  const auto* old = index_.find(m.id);
  plan_state st;
  st.id = m.id;
  st.epoch = epoch_;
  st.pinned = named;
  if (jobs.empty() && old && old->encoded == encoded) {
    st.unchanged = true;  // an unchanged conversation: nothing written, not even the manifest
    for (const auto& k : named) index_.pin(k);
    plans_.emplace(p.plan_id, std::move(st));
    return p;
  }

  std::uint64_t need = encoded.size();
  for (const auto& j : jobs) need += j.bytes;
  if (need > opts_.budget_bytes)
    return refuse(p, "the spill needs " + num(need) + " bytes, the budget is " + num(opts_.budget_bytes));
  // Pinned before any eviction, so none deletes a file this spill names.
  for (const auto& k : named)
    if (!writing.count(k)) index_.pin(k);
  if (!make_room(need, old ? old->encoded.size() : 0, m.id, named, p.evicted)) {
    std::vector<spill_file_key> dead;
    for (const auto& k : named)
      if (!writing.count(k) && index_.unpin(k)) dead.push_back(k);
    delete_files(dead);
    return refuse(p, "no room: the spill needs " + num(need) +
                         " bytes and evicting every other conversation would not make them");
  }
  for (const auto& j : jobs) {
    const bool block = j.what == spill_file_job::kind::block;
    const std::uint64_t name =
        block ? m.blocks[image.blocks[j.index].index].name : m.anchors[image.anchors[j.index].index].name;
    index_.add_file({block ? spill_file_kind::block : spill_file_kind::anchor, name}, j.bytes, false);
  }
  p.files = std::move(jobs);
  p.files.push_back({spill_file_job::kind::manifest, 0, spill_manifest_file(m.id), encoded.size()});
  p.bytes = need;
  plans_.emplace(p.plan_id, std::move(st));
  return p;
}

// ---- Encoding and writing (no index) ----------------------------------------------------------

namespace {

// A file of the plan as pieces: a head encoded over the staged bytes, then the staged rows or
// sections themselves (never copied into a file buffer here). Throws std::out_of_range or
// std::invalid_argument when the plan does not match the image.
std::vector<file_piece> encode_job(const state_layout& layout, const spill_image& image,
                                   const spill_file_job& f, std::vector<unsigned char>& head) {
  const spill_manifest& m = image.manifest;
  std::vector<file_piece> pieces;
  switch (f.what) {
    case spill_file_job::kind::block: {
      const spill_staged_block& s = image.blocks.at(f.index);
      const spill_block_ref& ref = m.blocks.at(s.index);
      std::vector<const unsigned char*> rows;
      for (const auto& r : s.rows) rows.push_back(r.data());
      head = encode_spill_block_head(layout, ref, m.tokens, rows);
      pieces.push_back({head.data(), head.size()});
      for (const auto& r : s.rows) pieces.push_back({r.data(), r.size()});
      break;
    }
    case spill_file_job::kind::anchor: {
      const spill_staged_anchor& s = image.anchors.at(f.index);
      std::vector<const unsigned char*> sections;
      for (const auto& x : s.sections) sections.push_back(x.data());
      head = encode_spill_anchor_head(layout, m.anchors.at(s.index), sections);
      pieces.push_back({head.data(), head.size()});
      for (const auto& x : s.sections) pieces.push_back({x.data(), x.size()});
      break;
    }
    case spill_file_job::kind::manifest:
      head = encode_spill_manifest(layout, m);
      pieces.push_back({head.data(), head.size()});
      break;
  }
  return pieces;
}

}  // namespace

std::vector<file_result> execute_spill_write(file_env& env, const state_layout& layout,
                                             const spill_image& image, const spill_write_plan& plan) {
  std::vector<file_result> out;
  if (plan.files.empty()) return out;
  if (const file_result d = env.make_dir(plan.folder); !d) {
    out.push_back(d);
    return out;
  }
  // File i is on the env's ring (its bytes copied at submission) while file i + 1 is encoded
  // here, so the crcs overlap the I/O; file i is waited for before file i + 1 is submitted, so
  // a failure stops everything after it, the manifest last of all.
  io_ticket writing;
  auto collect = [&]() {
    out.push_back(env.wait_write(writing));
    writing = io_ticket{};
    return out.back().ok;
  };
  std::vector<unsigned char> head;
  for (const auto& f : plan.files) {
    std::vector<file_piece> pieces;
    std::string bad;
    try {
      pieces = encode_job(layout, image, f, head);
    } catch (const std::exception& e) {
      bad = e.what();
    }
    if (writing && !collect()) return out;
    if (!bad.empty()) {
      out.push_back(file_result::failure(EINVAL, "encode " + f.name + ": " + bad));
      return out;
    }
    writing = env.submit_write_atomic(plan.folder, f.name, pieces);
  }
  if (writing) collect();
  return out;
}

// ---- Committing -------------------------------------------------------------------------------

void spill_store::restore_manifest_file(std::uint64_t id) {
  const std::string path = manifest_path(id);
  const auto* held = index_.find(id);
  if (!held) {
    env_.remove(path);
    return;
  }
  // The rename may have put the failed spill's manifest in place (a directory fsync that
  // failed, or a manifest whose files were lost meanwhile): the held one's bytes go back.
  const std::optional<std::uint64_t> size = env_.size(path);
  if (size && *size == held->encoded.size()) {
    std::vector<unsigned char> now(held->encoded.size());
    if (env_.read(path, 0, now.data(), now.size()) && now == held->encoded) return;
  }
  const auto& b = held->encoded;
  if (!env_.write_atomic(folder_, spill_manifest_file(id), {{b.data(), b.size()}}))
    warn_once("the previous manifest " + path + " could not be put back");
}

spill_write_report spill_store::commit(const spill_image& image, const spill_write_plan& plan,
                                       const std::vector<file_result>& results) {
  spill_write_report r;
  r.blocks_present = plan.blocks_present;
  r.anchors_present = plan.anchors_present;
  r.evicted = plan.evicted;
  if (plan.refused) {
    r.refused = true;
    r.error = plan.error;
    return r;
  }
  auto it = plans_.find(plan.plan_id);
  if (it == plans_.end()) throw std::logic_error("spill_store::commit: a plan this store did not prepare");
  const plan_state st = std::move(it->second);
  plans_.erase(it);
  const spill_manifest& m = image.manifest;
  counts_.blocks_skipped += plan.blocks_present;
  counts_.anchors_skipped += plan.anchors_present;

  std::vector<spill_file_key> dead;
  if (st.unchanged) {
    ++counts_.writes;
    ++counts_.writes_unchanged;
    touch(m.id);
    for (const auto& k : st.pinned)
      if (index_.unpin(k)) dead.push_back(k);
    delete_files(dead);
    return r;
  }

  bool failed = results.size() < plan.files.size();
  auto fail = [&](const std::string& why) {
    if (r.error.empty()) r.error = why;
    failed = true;
  };
  if (results.size() < plan.files.size() && !results.empty() && results.back().ok)
    fail("the writer stopped after " + num(results.size()) + " of " + num(plan.files.size()) + " files");
  else if (results.empty())
    fail("nothing was written");
  for (std::size_t i = 0; i + 1 < plan.files.size(); ++i) {
    const spill_file_job& f = plan.files[i];
    const bool block = f.what == spill_file_job::kind::block;
    const spill_file_key k{block ? spill_file_kind::block : spill_file_kind::anchor,
                           block ? m.blocks.at(image.blocks.at(f.index).index).name
                                 : m.anchors.at(image.anchors.at(f.index).index).name};
    if (i < results.size() && results[i].ok) {
      index_.set_present(k);
      ++(block ? r.blocks_written : r.anchors_written);
      ++(block ? counts_.blocks_written : counts_.anchors_written);
      r.bytes_written += f.bytes;
      counts_.bytes_written += f.bytes;
      dead.push_back(k);  // dead once unpinned, unless the manifest takes it
      continue;
    }
    if (i < results.size()) fail(results[i].message);
    // A failure after the rename (the directory's fsync) leaves the file: not durable, not ours.
    // A file the writer never reached is not there; removing it costs a failed unlink.
    env_.remove(path_of(k));
    index_.erase_file(k);
  }

  const std::size_t mi = plan.files.size() - 1;
  const bool manifest_tried = mi < results.size();
  if (manifest_tried && !results[mi].ok) fail(results[mi].message);
  if (!failed && st.epoch != epoch_) fail("the spill was cleared while it was written");
  if (!failed)
    for (const auto& k : st.pinned)
      if (!index_.present(k)) {
        fail("a file the manifest names was lost while it was written (evicted, failed or cleared)");
        break;
      }

  if (!failed) {
    const std::vector<unsigned char> encoded = encode_spill_manifest(layout_, m);
    r.bytes_written += encoded.size();
    counts_.bytes_written += encoded.size();
    const std::vector<spill_file_key> replaced = index_.install(m, encoded, ++use_clock_);
    dead.insert(dead.end(), replaced.begin(), replaced.end());
    env_.set_modified_s(manifest_path(m.id), next_stamp());
    ++counts_.writes;
  } else {
    r.failed = true;
    ++counts_.write_failures;
    warn_once(r.error);
    if (manifest_tried && st.epoch == epoch_) restore_manifest_file(m.id);
    if (manifest_tried && st.epoch != epoch_) env_.remove(manifest_path(m.id));
  }
  for (const auto& k : st.pinned)
    if (index_.unpin(k)) dead.push_back(k);
  delete_files(dead);
  return r;
}

}  // namespace anchorage
