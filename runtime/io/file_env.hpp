#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace anchorage {

// The outcome of a file operation: ok, or the errno that caused the failure and a message naming
// the step and the path ("open /x/a.tmp: No such file or directory"). I/O failures are values,
// never exceptions: a cache that gives up is the cold path (ARCHITECTURE.md §2, invariant 3).
struct file_result {
  bool ok = true;
  int error = 0;  // an errno value; 0 when ok
  std::string message;

  static file_result success() { return {}; }
  static file_result failure(int error, std::string message) {
    return {false, error, std::move(message)};
  }
  explicit operator bool() const { return ok; }
};

// One contiguous run of bytes of a file being written; a file is the concatenation of its pieces
// (e.g. a header, then each section), so callers never assemble one big buffer.
using file_piece = std::pair<const void*, std::size_t>;

// The suffix of a file being written. A name ending in it is never a finished file: a start-up
// sweep may delete every one it finds (a crash or a kill -9 left it).
inline constexpr const char* tmp_suffix = ".tmp";

// `dir` + "/" + `name`.
std::string join_path(const std::string& dir, const std::string& name);

// True when `name` ends in tmp_suffix.
bool is_tmp_name(const std::string& name);

// The file-system seam in front of the disk tier (LevelDB's Env): the tiers see only this
// interface; uring_env is the real one (io_uring, O_DIRECT), fault_env injects faults below it.
//
// Paths are plain POSIX paths. A `dir` argument names a directory; a `name` is one path component
// (no '/'). No method throws for an I/O error; a bad argument (a null piece with a nonzero size, a
// name containing '/') is a programmer error and asserts.
//
// Thread safety: an env is NOT thread-safe. One thread at a time may call it: in the actor system
// each env belongs to one writer actor (whose handlers never run concurrently). Two envs may work
// in the same directory at once on different names.
class file_env {
 public:
  virtual ~file_env() = default;

  // Durable, all-or-nothing write (invariant 5, "durable means renamed"): writes the pieces in
  // order to `dir/name.tmp` (created or truncated), fsyncs it, renames it to `dir/name`, then
  // fsyncs `dir`.
  // Success: `dir/name` holds exactly the pieces' bytes and has survived the fsyncs; no
  //   `name.tmp` is left.
  // Failure before the rename (no space, an I/O error, a missing directory): the tmp is removed
  //   (best effort) and whatever was under `dir/name` before is untouched.
  // Failure of the final directory fsync: the new file is in place but its name may not survive
  //   a power loss; the result is an error all the same.
  // A crash at any point leaves either the old file or the new one under `name`, never a mix,
  // and at most an orphan `name.tmp`.
  virtual file_result write_atomic(const std::string& dir, const std::string& name,
                                   const std::vector<file_piece>& pieces) = 0;

  // Reads exactly `n` bytes of `path` from byte `offset` into `dst` (any alignment).
  // Success: all n bytes are in dst. Failure: a missing file, an I/O error, or a range reaching
  // past the end of the file (ERANGE: a short file is an error, never a partial answer); dst's
  // contents are then unspecified. n == 0 succeeds when the file exists and offset <= its size.
  virtual file_result read(const std::string& path, std::uint64_t offset, void* dst,
                           std::size_t n) = 0;

  // The size in bytes of the regular file at `path`; nullopt when it does not exist or cannot be
  // inspected.
  virtual std::optional<std::uint64_t> size(const std::string& path) = 0;

  // The names (not paths) of the entries of `dir` other than "." and "..", sorted, tmp files
  // included (so a sweep can find them); empty when `dir` does not exist or cannot be read.
  virtual std::vector<std::string> list(const std::string& dir) = 0;

  // Removes the file at `path`. True when it was removed; false when it did not exist or could
  // not be removed. Not synced: a crash may bring it back, which only costs a later sweep.
  virtual bool remove(const std::string& path) = 0;

  // Creates `dir` and any missing parents (mode 0755). Succeeds when it already exists as a
  // directory; fails when the path exists as something else or cannot be created.
  virtual file_result make_dir(const std::string& dir) = 0;

  // Bytes available to an unprivileged writer on the file system holding `dir` (statvfs:
  // f_bavail * f_frsize); nullopt when `dir` cannot be inspected.
  virtual std::optional<std::uint64_t> free_bytes(const std::string& dir) = 0;

  // The file's modification time in whole seconds since the epoch; nullopt when it cannot be
  // inspected. The disk tier keeps an entry's last use here, so it outlives the process.
  virtual std::optional<std::int64_t> modified_s(const std::string& path) = 0;

  // Sets the file's modification (and access) time to `seconds` since the epoch. True when set.
  // Not synced, like remove().
  virtual bool set_modified_s(const std::string& path, std::int64_t seconds) = 0;
};

}  // namespace anchorage
