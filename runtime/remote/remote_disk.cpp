#include "runtime/remote/remote_disk.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>

#include <xxhash.h>

#include <cstdio>

#include "runtime/core/log.hpp"
#include "runtime/disk/disk_codec.hpp"

namespace anchorage {
namespace {

// The remote tree's root: the local folder's layout under a name no local path decides.
constexpr const char* remote_root = "disk";

std::string name_of(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }
std::string dir_of(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

}  // namespace

std::string remote_namespace(const std::string& salt) {
  if (salt.empty()) return "anchorage";
  const XXH128_hash_t h = XXH3_128bits(salt.data(), salt.size());
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return std::string("anchorage:") + hex;
}

std::string remote_target(const redis_options& o) {
  return o.host + ":" + std::to_string(o.port) + "/" + std::to_string(o.db);
}

std::vector<std::string> anchor_files(const disk_store& store, const std::vector<token_id>& tokens,
                                      const std::string& ns, const std::vector<std::size_t>& lines) {
  const disk_index& index = store.index();
  const std::size_t grid = static_cast<std::size_t>(store.layout().grid);
  std::vector<std::string> out;
  for (std::size_t line : lines) {
    if (grid == 0 || line == 0 || line % grid != 0 || line > tokens.size()) continue;
    const std::vector<std::uint64_t> chain = chunk_hashes(tokens, line, grid);
    const std::string* anchor = index.path(disk_names::anchor_id(ns, chain.back()));
    if (anchor == nullptr) continue;
    std::vector<std::string> files;
    for (std::uint64_t h : chain)
      if (const std::string* p = index.path(h)) files.push_back(*p);
    if (files.size() != chain.size()) continue;  // a chunk evicted meanwhile
    out.insert(out.end(), files.begin(), files.end());
    out.push_back(*anchor);
  }
  // A chunk shared by two anchors once; chunks keep coming before the anchors (push sorts too).
  std::vector<std::string> unique;
  for (std::string& p : out)
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(std::move(p));
  return unique;
}

remote_disk::remote_disk(redis_env& remote, std::uint64_t fingerprint, remote_disk_options options)
    : remote_(remote), names_(remote_root, fingerprint), options_(options) {}

bool remote_disk::read_remote(const std::string& path, std::vector<unsigned char>& out, file_result& error) {
  const auto n = remote_.size(path);
  if (!n) {  // missing, or Redis not answering: a ping tells which
    const file_result p = remote_.ping();
    error = p.ok ? file_result::failure(ENOENT, path + ": not in Redis") : p;
    return false;
  }
  out.resize(static_cast<std::size_t>(*n));
  error = remote_.read(path, 0, out.data(), out.size());
  return error.ok;
}

bool remote_disk::backing_off() {
  if (!has_failed_ || options_.retry_after_ms <= 0) return false;
  if (std::chrono::steady_clock::now() - failed_at_ >= std::chrono::milliseconds(options_.retry_after_ms))
    return false;
  ++counts_.backed_off;
  return true;
}

void remote_disk::failed() {
  has_failed_ = true;
  failed_at_ = std::chrono::steady_clock::now();
}

void remote_disk::fail(const std::string& what, const file_result& why, remote_fetch_report& r, bool redis) {
  if (redis) failed();
  ++counts_.failures;
  if (why.error == ETIMEDOUT) ++counts_.timeouts;
  r.error = what + ": " + why.message;
  if (!warned_) {
    warned_ = true;
    log_warn() << "the remote cache failed (" << r.error
               << "); requests take the cold path (further failures are counted until one succeeds)";
  }
}

remote_push_report remote_disk::push(file_env& local, const std::string& local_folder,
                                     const std::vector<std::string>& local_paths) {
  // Chunks first (they sit in the folder itself), then anchors (in a namespace's folder).
  std::vector<std::string> chunks, anchors;
  for (const std::string& p : local_paths) (dir_of(p) == local_folder ? chunks : anchors).push_back(p);
  return push_ordered(local, local_folder, names_.folder(), chunks, anchors, false);
}

remote_push_report remote_disk::push_ordered(file_env& local, const std::string& local_folder,
                                             const std::string& remote_folder,
                                             const std::vector<std::string>& parts,
                                             const std::vector<std::string>& heads, bool replace_heads) {
  remote_push_report r;
  auto note_failure = [&](const std::string& why) {
    ++r.failed;
    ++counts_.push_failures;
    if (r.error.empty()) r.error = why;
  };
  if (backing_off()) {
    for (std::size_t i = 0; i < parts.size() + heads.size(); ++i)
      note_failure("not sent: Redis failed less than " + std::to_string(options_.retry_after_ms) + " ms ago");
    return r;
  }
  std::vector<unsigned char> bytes;
  bool part_failed = false, redis_failed = false;
  auto send = [&](const std::string& path, bool head) {
    if (path.compare(0, local_folder.size() + 1, local_folder + "/") != 0) return;  // not ours
    if (redis_failed) {  // Redis failed in this batch: the rest would wait for it too
      note_failure("not sent: Redis failed earlier in the batch");
      return;
    }
    if (head && part_failed) {
      note_failure(path + ": not sent, a file it stands on was not");
      return;
    }
    const std::string rpath = remote_folder + path.substr(local_folder.size());
    auto lost = [&](const std::string& why, bool redis) {
      note_failure(why);
      if (redis) {
        failed();
        redis_failed = true;
      }
      if (!head) part_failed = true;
    };
    // A file named by its content is sent once; a head that changes under its name (a spill's
    // manifest) is sent again.
    if (!(head && replace_heads) && remote_.size(rpath)) {
      ++r.skipped;
      ++counts_.push_skipped;
      return;
    }
    const auto n = local.size(path);
    if (!n) {
      lost(path + ": gone from the local store", false);
      return;
    }
    bytes.resize(static_cast<std::size_t>(*n));
    file_result rd = local.read(path, 0, bytes.data(), bytes.size());
    if (!rd.ok) {
      lost("read " + path + ": " + rd.message, false);
      return;
    }
    const std::string rdir = dir_of(rpath);
    file_result w = remote_.make_dir(rdir);
    if (w.ok) w = remote_.write_atomic(rdir, name_of(rpath), {{bytes.data(), bytes.size()}});
    if (!w.ok) {
      lost(w.message, true);
      return;
    }
    ++r.written;
    ++counts_.pushed_files;
    counts_.pushed_bytes += bytes.size();
  };
  for (const std::string& p : parts) send(p, false);
  for (const std::string& p : heads) send(p, true);
  if (!redis_failed) has_failed_ = false;
  return r;
}

std::vector<std::string> store_files(const disk_store& store) {
  const disk_index& index = store.index();
  std::vector<std::string> paths;
  for (const disk_anchor_entry* a : index.usable_anchors()) {
    for (std::uint64_t h : a->chain)
      if (const std::string* p = index.path(h)) paths.push_back(*p);
    if (const std::string* p = index.path(disk_names::anchor_id(a->ns, a->chain.back()))) paths.push_back(*p);
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;  // push() puts the chunks first
}

remote_push_report remote_disk::push_store(disk_store& store) {
  return push(store.env(), store.folder(), store_files(store));
}

remote_fetch_report remote_disk::fetch(disk_store& store, const std::vector<token_id>& prompt,
                                       const std::string& ns) {
  remote_fetch_report r;
  const std::size_t grid = static_cast<std::size_t>(store.layout().grid);
  if (prompt.size() < 2 || grid == 0 || !disk_names::valid_ns(ns)) return r;
  const std::size_t top = (prompt.size() - 1) / grid * grid;
  if (top == 0) return r;
  const auto local_hit = store.find(prompt, ns);
  const std::size_t local_line = local_hit ? local_hit->line : 0;
  if (local_line >= top) return r;
  if (backing_off()) {
    r.error = "not asked: Redis failed less than " + std::to_string(options_.retry_after_ms) + " ms ago";
    return r;
  }

  ++counts_.fetches;
  const auto start = std::chrono::steady_clock::now();
  // Every call waits at most what is left of the deadline: a fetch never outlasts it.
  const remote_deadline bounded(remote_, start + std::chrono::milliseconds(options_.fetch_deadline_ms));
  auto past_deadline = [&] {
    return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(options_.fetch_deadline_ms);
  };
  auto deadline = [&](remote_fetch_report& rep) {
    fail("fetch",
         file_result::failure(ETIMEDOUT,
                              "past its deadline of " + std::to_string(options_.fetch_deadline_ms) + " ms"),
         rep);
  };

  // One round trip: which grid lines above the local one have an anchor in Redis.
  const std::vector<std::uint64_t> hashes = chunk_hashes(prompt, top, grid);
  const std::size_t first = local_line / grid;  // hashes[i] is the line (i + 1) * grid
  std::vector<std::string> names;
  for (std::size_t i = first; i < hashes.size(); ++i) names.push_back(names_.anchor_name(hashes[i]));
  // A line inside an image's first rows is never resumed (disk_index::find): not worth a fetch.
  std::vector<bool> usable(names.size());
  for (std::size_t j = 0; j < names.size(); ++j)
    usable[j] = !ends_in_image_key_rows(prompt, (first + j + 1) * grid);
  file_result error;
  const auto present = remote_.has_names(names_.anchor_dir(ns), names, error);
  if (!present) {
    fail("look up the anchors", error, r);
    return r;
  }
  std::size_t deepest = 0;  // 1 + the index into hashes, 0: none
  for (std::size_t j = names.size(); j-- > 0;)
    if ((*present)[j] && usable[j]) {
      deepest = first + j + 1;
      break;
    }
  if (deepest == 0) {
    ++counts_.misses;
    warned_ = false;
    has_failed_ = false;
    return r;
  }
  if (past_deadline()) {
    deadline(r);
    return r;
  }

  // The anchor, then its chain's chunks the local store lacks, sizes checked before copying.
  const std::uint64_t key = hashes[deepest - 1];
  const std::string anchor_rpath = names_.anchor_path(ns, key);
  std::vector<unsigned char> anchor;
  if (!read_remote(anchor_rpath, anchor, error)) {
    fail("read " + anchor_rpath, error, r, error.error != ENOENT);
    return r;
  }
  const auto header = read_anchor_header(anchor.data(), anchor.size());
  const std::vector<std::uint64_t> chain(hashes.begin(),
                                         hashes.begin() + static_cast<std::ptrdiff_t>(deepest));
  if (!header.ok() || header.value.chunk_hashes != chain ||
      header.value.fingerprint != store.layout().fingerprint) {
    fail("read " + anchor_rpath, file_result::failure(EIO, "its header does not name the prompt's chain"), r,
         false);
    return r;
  }
  std::vector<std::uint64_t> missing;
  for (std::uint64_t h : chain)
    if (!store.has_chunk(h)) missing.push_back(h);
  const std::uint64_t budget = options_.fetch_max_bytes ? options_.fetch_max_bytes : store.max_bytes();
  const std::uint64_t need = anchor.size() + missing.size() * chunk_file_bytes(store.layout());
  if (need > budget) {
    ++counts_.refused_budget;
    r.error = "the hit's " + std::to_string(need) + " bytes are over the fetch's " + std::to_string(budget);
    return r;
  }

  file_env& local = store.env();
  std::vector<std::string> chunk_paths;
  std::vector<unsigned char> bytes;
  for (std::uint64_t h : missing) {
    if (past_deadline()) {
      deadline(r);
      break;
    }
    const std::string rpath = names_.chunk_path(h);
    if (!read_remote(rpath, bytes, error)) {
      fail("read " + rpath, error, r, error.error != ENOENT);
      break;
    }
    const file_result w =
        local.write_atomic(store.folder(), names_.chunk_name(h), {{bytes.data(), bytes.size()}});
    if (!w.ok) {
      fail("write " + store.names().chunk_path(h), w, r, false);
      break;
    }
    chunk_paths.push_back(store.names().chunk_path(h));
    ++r.files;
    r.bytes += bytes.size();
  }
  std::string anchor_path;
  if (r.error.empty()) {
    const std::string dir = store.names().anchor_dir(ns);
    file_result w = local.make_dir(dir);
    if (w.ok) w = local.write_atomic(dir, names_.anchor_name(key), {{anchor.data(), anchor.size()}});
    if (w.ok) {
      anchor_path = store.names().anchor_path(ns, key);
      ++r.files;
      r.bytes += anchor.size();
    } else {
      fail("write " + store.names().anchor_path(ns, key), w, r, false);
    }
  }
  // Index what arrived (a chain cut short is removed again by adopt: its anchor is missing).
  if (anchor_path.empty()) {
    for (const std::string& p : chunk_paths) local.remove(p);
    return r;
  }
  store.adopt(chunk_paths, ns, anchor_path);
  const auto hit = store.find(prompt, ns);
  r.line = hit && hit->line > local_line ? hit->line : 0;
  counts_.fetched_files += static_cast<long>(r.files);
  counts_.fetched_bytes += r.bytes;
  if (r.line) {
    ++counts_.hits;
    warned_ = false;
    has_failed_ = false;
  } else {
    fail("index the fetched files",
         file_result::failure(EIO, "not indexed: a header failed its checks, or the budget evicted it"), r,
         false);
  }
  return r;
}

}  // namespace anchorage
