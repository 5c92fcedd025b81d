#pragma once
// Start-up recovery of the durable store (runtime/disk/disk_store.hpp): reads
// the headers of the files in the store's folder, removes what can never be used, and rebuilds
// a disk_index from the rest, without reading a row:
//   - .tmp orphans (a crash or kill -9 during a write) are reaped;
//   - files of another fingerprint or grid inside our folder are swept;
//   - files with a bad header, a wrong length or a name their header contradicts are removed,
//     then chunks whose parent is missing and anchors whose chain is incomplete;
//   - other names, and other folders, are left alone.
// Last use is each file's modification time (a restore sets it), so it outlives the process.
//
// Not thread-safe: it uses the env, whose one-thread rule it inherits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/disk_format.hpp"
#include "protocol/disk_types.hpp"
#include "runtime/disk/disk_index.hpp"
#include "runtime/disk/disk_names.hpp"
#include "runtime/engine/state_adapter.hpp"
#include "runtime/io/file_env.hpp"

namespace anchorage {

// The chunk hashes other engines' folders under `dir` hold (dir/<another fingerprint>/c-*.chk, by
// their names: nothing is read), at most `limit`: where the miss reasons look for a line a
// prompt shares only with a cache other weights or another grid built.
std::vector<std::uint64_t> other_engines_chunks(file_env& env, const std::string& dir,
                                                std::uint64_t own_fingerprint, std::size_t limit);

class disk_scanner {
 public:
  // Every reference must outlive the scanner.
  disk_scanner(file_env& env, const state_layout& layout, const disk_names& names);

  // Creates the folder, clears `index` and rebuilds it from the folder's files; `now_s` is the
  // last use of a file whose time cannot be read. Nothing indexed when the folder cannot be
  // made. The report's evicted and seconds are the caller's to fill.
  disk_scan_report scan(disk_index& index, std::int64_t now_s);

  // Indexes files another store wrote and this one just received (the shared tier's fetch,
  // runtime/remote/remote_disk.hpp): the chunk files at `chunk_paths` (any order; one already
  // indexed is skipped) and then the anchor of `ns` at `anchor_path`, each checked as scan()
  // checks it (its header, its name, its length, its chain). A file that fails is deleted.
  // Last use is `now_s`. Returns the files indexed.
  std::size_t adopt(disk_index& index, const std::vector<std::string>& chunk_paths, const std::string& ns,
                    const std::string& anchor_path, std::int64_t now_s);

  // Deletes every file of ours in the folder (chunks, anchors, checkpoints, tmp files), indexed
  // or not; other names stay. Returns the files deleted.
  std::size_t remove_ours();

 private:
  enum class verdict { ok, foreign, damaged };
  // A file's header read and checked against its name, its length, our fingerprint and grid.
  verdict check_chunk(const std::string& path, std::uint64_t hash, disk_format::chunk_header& out);
  verdict check_anchor(const std::string& path, std::uint64_t key, disk_format::anchor_header& out);

  file_env& env_;
  const state_layout& layout_;
  const disk_names& names_;
  std::size_t grid_;
};

}  // namespace anchorage
