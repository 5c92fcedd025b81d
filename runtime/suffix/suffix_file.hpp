#pragma once
// The suffix store's few POSIX file operations. The store does not go through file_env: its log
// is appended to in place (file_env has whole-file atomic writes only), and its directory and
// file carry owner-only modes, which file_env does not set. Not thread-safe: one owner.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.hpp"

namespace anchorage::suffix_file {

// What prepare_directory found.
struct directory_report {
  bool created = false;
  bool tightened = false;  // it existed with group or other bits set and was chmod'ed to 0700
};

// Makes `dir` a directory of mode 0700 owned by this user: missing parents are created (mode
// 0700), the directory itself is created 0700, and an existing one with a wider mode is
// tightened to 0700. Fails (nothing changed) when the path is a symbolic link or not a
// directory, or is owned by another user.
expected<directory_report> prepare_directory(const std::string& dir);

// An open log: appends go to its end; the descriptor is closed by the destructor.
class log_handle {
 public:
  log_handle() = default;
  ~log_handle();
  log_handle(log_handle&& o) noexcept;
  log_handle& operator=(log_handle&& o) noexcept;
  log_handle(const log_handle&) = delete;
  log_handle& operator=(const log_handle&) = delete;

  // Opens `path` for reading and appending; when it does not exist, first creates it holding
  // exactly `initial` (written to a 0600 tmp, fsynced, renamed, directory fsynced). An orphan
  // `path.tmp` (a replace cut by a kill) is removed first. Fails when it is a symbolic link, not
  // a regular file or owned by another user, or when the orphan cannot be removed; a wider mode
  // is tightened to 0600.
  static expected<log_handle> open(const std::string& path, const std::vector<unsigned char>& initial);

  bool is_open() const { return fd_ >= 0; }
  std::uint64_t size() const { return size_; }
  bool tightened() const { return tightened_; }

  // The whole file.
  expected<std::vector<unsigned char>> read_all() const;

  // Cuts the file to `bytes` (<= size()) and fsyncs it.
  status truncate(std::uint64_t bytes);

  // Writes `bytes` at the end (not fsynced unless `sync`). On failure the file is cut back to
  // its size before the call; when even that fails the handle is closed (the next open cuts
  // the partial record as a torn tail).
  status append(const std::vector<unsigned char>& bytes, bool sync);

  // Replaces the file with `bytes` atomically (tmp 0600, fsync, rename over it, directory
  // fsync) and reopens it. On failure before the rename the old file stays and stays open.
  status replace(const std::vector<unsigned char>& bytes);

 private:
  int fd_ = -1;
  std::string path_;
  std::uint64_t size_ = 0;
  bool tightened_ = false;
};

}  // namespace anchorage::suffix_file
