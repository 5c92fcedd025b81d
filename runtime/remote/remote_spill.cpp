// The session spill's part of the shared level (remote_disk.hpp): a spill's files pushed behind
// its commit, and a request's spilled conversation fetched into this replica's spill folder.
#include <algorithm>
#include <cerrno>
#include <chrono>

#include "runtime/core/log.hpp"
#include "runtime/core/token_prefix.hpp"
#include "runtime/remote/remote_disk.hpp"
#include "runtime/spill/spill_codec.hpp"
#include "runtime/spill/spill_image.hpp"

namespace anchorage {
namespace {

// The deepest start the manifest can give `prompt` (the spill tier's offer decides; this only
// says whether asking for its files can pay): its end anchor when the prompt holds the
// conversation's prompt part, else its deepest grid anchor within what they share.
std::size_t reach(const spill_manifest& m, const std::vector<token_id>& prompt) {
  const std::size_t shared = common_prefix(m.tokens, prompt);
  if (m.end && m.end->at < prompt.size() && shared >= std::min(m.end->prompt_len, m.end->at))
    return m.end->at;
  const std::size_t limit = std::min({shared, prompt.size() - 1, m.taint});
  std::size_t best = 0;
  for (const spill_anchor_ref& a : m.anchors)
    if (!a.end && a.at <= limit) best = std::max(best, a.at);
  return best;
}

}  // namespace

remote_push_report remote_disk::push_spill(file_env& local, const std::string& spill_folder,
                                           const std::vector<std::string>& local_paths) {
  std::vector<std::string> files, manifests;
  std::uint64_t v = 0;
  for (const std::string& p : local_paths)
    (parse_spill_manifest_file(p.substr(p.find_last_of('/') + 1), v) ? manifests : files).push_back(p);
  const long before = counts_.pushed_files;
  const remote_push_report r = push_ordered(
      local, spill_folder, names_.folder() + "/" + spill_format::folder_name, files, manifests, true);
  if (r.failed == 0 && counts_.pushed_files > before && !manifests.empty())
    counts_.spill_pushes += static_cast<long>(manifests.size());
  return r;
}

std::shared_ptr<fetched_spill> remote_disk::fetch_spill(file_env& local, const std::string& spill_folder,
                                                        const state_layout& layout,
                                                        const std::string& session_key,
                                                        const std::vector<token_id>& prompt,
                                                        std::size_t floor, std::uint64_t budget,
                                                        remote_fetch_report& r) {
  const auto grid = static_cast<std::size_t>(layout.grid);
  if (prompt.size() < 2 || grid == 0 || prompt.size() - 1 <= floor) return nullptr;
  if (backing_off()) return nullptr;
  const std::uint64_t id = spill_conversation_id(session_key, prompt, grid);
  const std::string rfolder = names_.folder() + "/" + spill_format::folder_name;
  const std::string mname = spill_manifest_file(id);

  ++counts_.spill_fetches;
  const auto start = std::chrono::steady_clock::now();
  const remote_deadline bounded(remote_, start + std::chrono::milliseconds(options_.fetch_deadline_ms));
  auto past_deadline = [&] {
    return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(options_.fetch_deadline_ms);
  };
  std::vector<unsigned char> bytes;
  file_result error;
  if (!read_remote(rfolder + "/" + mname, bytes, error)) {
    if (error.error == ENOENT) {
      has_failed_ = false;
      return nullptr;  // no conversation of this session and head was ever pushed
    }
    fail("read the spilled conversation", error, r);
    return nullptr;
  }
  auto decoded = decode_spill_manifest(bytes.data(), bytes.size(), layout, id);
  if (!decoded.ok()) {
    fail("read " + rfolder + "/" + mname, file_result::failure(EIO, "its manifest failed its checks"), r,
         false);
    return nullptr;
  }
  const spill_manifest& m = decoded.value;
  if (reach(m, prompt) <= floor) return nullptr;  // it would not start the prompt deeper
  // The folder's own manifest of this conversation, when as new, is already what Redis holds.
  const std::string local_manifest = join_path(spill_folder, mname);
  if (const auto n = local.size(local_manifest); n && *n == bytes.size()) {
    std::vector<unsigned char> held(bytes.size());
    if (local.read(local_manifest, 0, held.data(), held.size()).ok && held == bytes) return nullptr;
  }

  // What the folder lacks, sizes checked before a byte is copied.
  struct wanted {
    std::string name;
    std::uint64_t bytes;
  };
  std::vector<wanted> missing;
  std::uint64_t need = bytes.size();
  auto want = [&](const std::string& name, std::uint64_t size) {
    if (local.size(join_path(spill_folder, name))) return;
    missing.push_back({name, size});
    need += size;
  };
  for (const spill_block_ref& b : m.blocks)
    want(spill_block_file(b.name), spill_block_file_bytes(layout, b.a, b.b));
  for (const spill_anchor_ref& a : m.anchors)
    want(spill_anchor_file(a.name), spill_anchor_file_bytes(layout));
  if (budget > 0 && need > budget) {
    ++counts_.refused_budget;
    r.error = "the spilled conversation's " + std::to_string(need) + " bytes are over the fetch's " +
              std::to_string(budget);
    return nullptr;
  }

  auto out = std::make_shared<fetched_spill>();
  out->id = id;
  std::vector<unsigned char> file;
  file_result w = local.make_dir(spill_folder);
  if (!w.ok) fail("make " + spill_folder, w, r, false);
  for (const wanted& f : missing) {
    if (!r.error.empty()) break;
    if (past_deadline()) {
      fail("fetch",
           file_result::failure(ETIMEDOUT,
                                "past its deadline of " + std::to_string(options_.fetch_deadline_ms) + " ms"),
           r);
      break;
    }
    const std::string rpath = rfolder + "/" + f.name;
    if (!read_remote(rpath, file, error)) {
      fail("read " + rpath, error, r, error.error != ENOENT);
      break;
    }
    if (file.size() != f.bytes) {  // another record's bytes, or a cut one: the adopt would refuse it
      fail("read " + rpath, file_result::failure(EIO, "its size is not the manifest's"), r, false);
      break;
    }
    w = local.write_atomic(spill_folder, f.name, {{file.data(), file.size()}});
    if (!w.ok) {
      fail("write " + join_path(spill_folder, f.name), w, r, false);
      break;
    }
    out->written.push_back(f.name);
    ++r.files;
    r.bytes += file.size();
  }
  if (!r.error.empty()) {
    for (const std::string& name : out->written) local.remove(join_path(spill_folder, name));
    return nullptr;
  }
  out->manifest = std::move(bytes);
  r.bytes += out->manifest.size();
  ++r.files;
  counts_.fetched_files += static_cast<long>(r.files);
  counts_.fetched_bytes += r.bytes;
  ++counts_.spill_hits;
  warned_ = false;
  has_failed_ = false;
  return out;
}

}  // namespace anchorage
