#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace anchorage {

// The outcome of a file operation: ok, or the errno that caused the failure and a message naming
// the step and the path ("open /x/a.tmp: No such file or directory"). I/O failures are values,
// never exceptions: a cache that gives up is the cold path (docs/ARCHITECTURE.md, invariant 3).
struct file_result {
  bool ok = true;
  int error = 0;  // an errno value; 0 when ok
  std::string message;

  static file_result success() { return {}; }
  static file_result failure(int error, std::string message) { return {false, error, std::move(message)}; }
  explicit operator bool() const { return ok; }
};

// One contiguous run of bytes of a file being written; a file is the concatenation of its pieces
// (e.g. a header, then each section), so callers never assemble one big buffer.
using file_piece = std::pair<const void*, std::size_t>;

// The suffix of a file being written. A name ending in it is never a finished file: a start-up
// sweep may delete every one it finds (a crash or a kill -9 left it).
inline constexpr const char* tmp_suffix = ".tmp";

// The bytes of a whole file read by file_env::submit_read: `size()` bytes at a 4096-aligned
// address (room for O_DIRECT's rounding up), owned by whoever holds the buffer.
class file_buffer {
 public:
  file_buffer() = default;
  // `n` bytes, with capacity rounded up to 4096; std::bad_alloc when memory is short.
  explicit file_buffer(std::size_t n);
  file_buffer(file_buffer&& o) noexcept { *this = std::move(o); }
  file_buffer& operator=(file_buffer&& o) noexcept {
    data_ = std::move(o.data_);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
    return *this;
  }
  unsigned char* data() { return data_.get(); }
  const unsigned char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  // Makes the buffer `n` bytes long, n <= capacity() (a buffer reused for another file).
  void set_size(std::size_t n) { size_ = n <= capacity_ ? n : capacity_; }
  // Gives the memory up without freeing it (an env whose ring may still write into it).
  void leak() {
    (void)data_.release();
    size_ = capacity_ = 0;
  }

 private:
  struct free_deleter {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, free_deleter> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// Names one asynchronous operation of one env (submit_read, submit_write_atomic) until it is
// waited for; id 0 names none.
struct io_ticket {
  std::uint64_t id = 0;
  explicit operator bool() const { return id != 0; }
};

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
  // fsyncs `dir`. The file is the owner's alone (0600), whatever the umask.
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
  virtual file_result read(const std::string& path, std::uint64_t offset, void* dst, std::size_t n) = 0;

  // The size in bytes of the regular file at `path`; nullopt when it does not exist or cannot be
  // inspected.
  virtual std::optional<std::uint64_t> size(const std::string& path) = 0;

  // The names (not paths) of the entries of `dir` other than "." and "..", sorted, tmp files
  // included (so a sweep can find them); empty when `dir` does not exist or cannot be read.
  virtual std::vector<std::string> list(const std::string& dir) = 0;

  // Removes the file at `path`. True when it was removed; false when it did not exist or could
  // not be removed. Not synced: a crash may bring it back, which only costs a later sweep.
  virtual bool remove(const std::string& path) = 0;

  // Creates `dir` and any missing parents, each one it creates 0700 whatever the umask (the
  // caches' folders are the owner's alone; runtime/io/private_dir.hpp). Succeeds when it already
  // exists as a directory; fails when the path exists as something else or cannot be created.
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

  // ---- Submission ahead -------------------------------------------------------------------
  // The asynchronous forms let one thread keep the device busy while it computes (a restore
  // verifies file i while file i + 1 is read; a write encodes file i + 1 while file i is
  // written), with no thread of its own. The same one-thread-at-a-time rule holds: the submit
  // and the wait are calls on the env like any other, and the env makes progress on what was
  // submitted only in the kernel or inside its own calls. Several operations may be in flight
  // at once, in any mix with the synchronous calls, and waited for in any order.
  // Every ticket must be waited for exactly once; waiting for a ticket this env did not give, or
  // twice, is a programmer error and asserts. Destroying an env with operations in flight waits
  // for them and discards their results.

  // Starts reading the first `n` bytes of `path` into a new file_buffer of size n. Never fails
  // by itself: every failure (a missing file, a file shorter than n, an I/O error) is reported by
  // wait_read. An env without asynchronous I/O may read at once, here.
  virtual io_ticket submit_read(const std::string& path, std::size_t n) = 0;
  // Waits for a submit_read. Success: `out` holds the n bytes. Failure: as read(); `out` is then
  // empty.
  virtual file_result wait_read(io_ticket ticket, file_buffer& out) = 0;

  // Starts write_atomic(dir, name, pieces). The env copies the pieces' bytes before it returns,
  // so the caller may free or change them at once. Never fails by itself: the outcome, with
  // write_atomic's contract (tmp removed on a failure before the rename, at most an orphan tmp
  // after a crash), is what wait_write returns. The file is in place only once wait_write has
  // returned success.
  virtual io_ticket submit_write_atomic(const std::string& dir, const std::string& name,
                                        const std::vector<file_piece>& pieces) = 0;
  // Waits for a submit_write_atomic and returns what write_atomic would have.
  virtual file_result wait_write(io_ticket ticket) = 0;
};

}  // namespace anchorage
