#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/io/file_env.hpp"

struct io_uring;  // liburing's ring; kept out of this header

namespace anchorage {

struct uring_env_options {
  unsigned queue_depth = 8;            // ring entries, and blocks in flight at once
  std::size_t block_bytes = 4u << 20;  // the largest single read or write; a multiple of 4096
  bool direct = true;                  // try O_DIRECT first (see uring_env)
};

// The real file_env (io_uring works on Debian 12 with liburing 2.3; 4 MiB blocks at queue depth 8 reach
// the device's sequential bandwidth).
//
// I/O: one io_uring per env. A file is written and read in blocks of up to block_bytes, up to
// queue_depth of them in flight, each through its own bounce buffer (posix_memalign 4096,
// allocated on first use and kept). Files are opened with O_DIRECT; where the file system
// refuses it (open or the first transfer fails with EINVAL, e.g. tmpfs) the same call falls back
// to buffered I/O. Under O_DIRECT the tail block is written padded with zeros to 4096 bytes and
// the file is then ftruncate'd to its exact size before the fsync; reads cover the aligned range
// and copy out the bytes asked for. The fsync goes through the ring (IORING_OP_FSYNC); the
// rename is rename(2); the directory is synced by open(O_DIRECTORY) + fsync(2).
// Where io_uring_queue_init fails (a sandbox forbidding io_uring) the env still works, with
// pread/pwrite/fsync one block at a time; uses_uring() tells which.
//
// Submission ahead (submit_read, submit_write_atomic): the operation's bytes live in one
// 4096-aligned buffer of the whole file (a read's is the caller's file_buffer; a write copies
// its pieces into one at submission, so a write in flight holds one extra copy of its file), cut
// into up to queue_depth transfers of at least block_bytes (one finished write's buffer of up to
// 256 MiB is kept for the next write, so a run of writes maps its pages once), submitted at
// once with no bounce buffer. At most queue_depth such transfers are in flight over all operations; the rest
// are submitted as earlier ones complete, inside the env's calls. The fsync, rename and directory sync of a
// write happen in wait_write. O_DIRECT's EINVAL falls back to buffered I/O there too. Without a ring, submit
// does the whole operation at once and wait returns its result.
//
// Every system call's result is checked and mapped to a file_result; nothing here throws.
// Not thread-safe (see file_env): the ring and the bounce buffers belong to the one thread that
// calls the env at a time.
class uring_env final : public file_env {
 public:
  explicit uring_env(uring_env_options options = {});
  ~uring_env() override;
  uring_env(const uring_env&) = delete;
  uring_env& operator=(const uring_env&) = delete;

  // True when the io_uring was set up; false when the env runs on plain pread/pwrite.
  bool uses_uring() const { return ring_ != nullptr; }

  file_result write_atomic(const std::string& dir, const std::string& name,
                           const std::vector<file_piece>& pieces) override;
  file_result read(const std::string& path, std::uint64_t offset, void* dst, std::size_t n) override;
  std::optional<std::uint64_t> size(const std::string& path) override;
  std::vector<std::string> list(const std::string& dir) override;
  bool remove(const std::string& path) override;
  file_result make_dir(const std::string& dir) override;
  std::optional<std::uint64_t> free_bytes(const std::string& dir) override;
  std::optional<std::int64_t> modified_s(const std::string& path) override;
  bool set_modified_s(const std::string& path, std::int64_t seconds) override;
  io_ticket submit_read(const std::string& path, std::size_t n) override;
  file_result wait_read(io_ticket ticket, file_buffer& out) override;
  io_ticket submit_write_atomic(const std::string& dir, const std::string& name,
                                const std::vector<file_piece>& pieces) override;
  file_result wait_write(io_ticket ticket) override;

 private:
  struct async_op;
  struct async_piece {
    async_op* op = nullptr;
    std::uint64_t offset = 0;
    std::size_t length = 0, needed = 0, done = 0;
  };
  // One submitted read or write, until it is waited for.
  struct async_op {
    bool write = false;
    bool direct = false;
    int fd = -1;
    std::string path;         // the file read, or the tmp written
    std::string dir, name;    // a write's final place
    file_buffer buf;          // the whole file (aligned extent), the kernel's while in flight
    std::uint64_t total = 0;  // the bytes the caller asked for or gave
    std::vector<async_piece> pieces;
    std::size_t next = 0;  // the first piece not submitted yet
    unsigned in_flight = 0;
    file_result result;  // the first failure
  };

  // Block k of a transfer covers file bytes [start + k * block_bytes, + length); `fill` prepares
  // a buffer before a write, `take` consumes one after a read.
  struct transfer {
    int fd = -1;
    bool write = false;
    std::uint64_t start = 0;   // first byte of the I/O range (aligned under O_DIRECT)
    std::uint64_t end = 0;     // one past the last byte submitted (aligned under O_DIRECT)
    std::uint64_t needed = 0;  // one past the last byte that must come back (reads)
    std::function<void(std::size_t k, char* buf, std::size_t len)> fill;
    std::function<void(std::size_t k, const char* buf, std::size_t len)> take;
  };

  file_result ensure_buffers();
  file_result abandon_ring(int err, const std::string& step, const std::string& path);
  file_result pump(const transfer& t, const std::string& path);
  file_result sync_file(int fd, const std::string& path);
  file_result write_tmp(const std::string& tmp, bool direct, const std::vector<file_piece>& pieces,
                        std::uint64_t total);
  file_result read_once(const std::string& path, bool direct, std::uint64_t offset, void* dst, std::size_t n);
  // Waits for one completion, handling every completion of an async piece on the way; returns 0
  // with a synchronous transfer's user data and result, or the wait's errno.
  int reap(std::uintptr_t& data, int& res);
  // Whether `data` names an async piece (they are pointers; pump's slots and the fsync are small).
  static bool is_async(std::uintptr_t data) { return data >= async_tag_min; }
  void on_async(async_piece& p, int res);
  // Submits what fits of op's pieces; false when the ring failed (abandoned, op failed).
  bool submit_async(async_op& op);
  // Submits and reaps until nothing of `op` is in flight or left to submit.
  void drain(async_op& op);
  file_result finish_write(async_op& op);
  io_ticket start(std::unique_ptr<async_op> op);
  std::unique_ptr<async_op> take(io_ticket ticket, bool write);

  static constexpr std::uintptr_t async_tag_min = 1u << 16;
  static constexpr std::uintptr_t fsync_tag = async_tag_min - 1;

  uring_env_options options_;
  std::unique_ptr<io_uring> ring_;  // null when io_uring is unavailable
  std::vector<char*> buffers_;      // queue_depth bounce buffers of block_bytes each
  std::unordered_map<std::uint64_t, std::unique_ptr<async_op>> ops_;  // by ticket id
  std::uint64_t next_ticket_ = 1;
  unsigned async_in_flight_ = 0;  // async pieces submitted and not completed
  file_buffer write_spare_;       // the largest finished write's buffer, reused by the next
  static constexpr std::size_t spare_max_bytes = 256u << 20;
};

}  // namespace anchorage
