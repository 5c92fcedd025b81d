#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/io/file_env.hpp"

namespace anchorage {

// What a fault_env did, for tests to assert on.
struct fault_counters {
  std::uint64_t writes = 0;             // write_atomic calls
  std::uint64_t reads = 0;              // read calls
  std::uint64_t bytes_written = 0;      // bytes that reached a file through this env, tmp files too
  std::uint64_t bytes_read = 0;         // bytes returned by successful reads
  std::uint64_t no_space = 0;           // writes failed with ENOSPC by no_space_after
  std::uint64_t read_errors = 0;        // reads failed by fail_reads
  std::uint64_t crashes = 0;            // writes "crashed" by crash_before_rename or torn_write
  std::uint64_t bit_flips = 0;          // reads altered by flip_bit_on_read
  std::uint64_t dir_sync_failures = 0;  // writes failed by fail_directory_sync
};

// A file_env wrapped around another one (usually a uring_env on a temp directory) whose faults a
// test switches on: the LevelDB FaultInjectionTestEnv / SpecialEnv pattern. The faults happen
// below the seam: callers see only file_results and bytes, as they would from a failing disk.
// Every switch is off at construction; heal() turns them all off. Faults are built from the
// wrapped env's own operations (a "crash" is a tmp written under its final tmp name), so the
// on-disk state they leave is exactly the state a real failure would leave.
//
// The asynchronous forms inject the same faults: submit_read counts a read; fail_reads fails it
// (reported by wait_read, as a real env reports every failure) and flip_bit_on_read alters the
// buffer wait_read returns. submit_write_atomic delegates to the base's asynchronous write when
// no write switch is armed; with one armed it runs the faulted write_atomic at once and
// wait_write returns its outcome.
//
// Not thread-safe, like every file_env. `base` must outlive this env.
class fault_env final : public file_env {
 public:
  explicit fault_env(file_env& base) : base_(base) {}

  // From now on, writes succeed until `bytes` more bytes have been written in total; the write
  // that would pass the limit writes the bytes that fit into its tmp, then fails with ENOSPC, its
  // tmp removed and the previous file under its name untouched; every later write fails the same
  // way (a full disk stays full) until heal().
  void no_space_after(std::uint64_t bytes) { space_left_ = bytes; }

  // Every read fails with `error` (e.g. EIO) without touching dst, until fail_reads(0) or heal().
  void fail_reads(int error) { read_error_ = error; }

  // The next write_atomic writes all its bytes to `name.tmp`, then stops as a crash (kill -9,
  // power loss) before the rename would: `name.tmp` stays on disk, the previous file under
  // `name` is untouched, and the call returns EIO (a real crash returns nothing at all).
  void crash_before_rename() { crash_after_ = all_bytes; }

  // The next write_atomic completes (the file renamed into place) and then reports EIO, as when
  // the directory's fsync fails: the one failure that leaves the new file under its name.
  void fail_directory_sync() { fail_dir_sync_ = true; }

  // Like crash_before_rename, but only the first `bytes` bytes reach `name.tmp`.
  void torn_write(std::uint64_t bytes) { crash_after_ = bytes; }

  // The next read whose range covers file byte `byte_index` returns that byte with bit `bit`
  // (0-7) inverted, as silent corruption on the medium would; reads not covering it are
  // unaltered and leave the switch armed.
  void flip_bit_on_read(std::uint64_t byte_index, unsigned bit);

  // From now on fail_reads and flip_bit_on_read apply only to reads of `path` (every other read
  // passes untouched and leaves them armed); an empty path, or heal(), makes them apply to
  // every read again. How a test aims at one file of several, e.g. the one read ahead.
  void read_faults_only_for(std::string path) { read_fault_path_ = std::move(path); }

  // Turns every switch off; counters are kept.
  void heal();

  const fault_counters& counters() const { return counters_; }

  file_result write_atomic(const std::string& dir, const std::string& name,
                           const std::vector<file_piece>& pieces) override;
  file_result read(const std::string& path, std::uint64_t offset, void* dst, std::size_t n) override;
  std::optional<std::uint64_t> size(const std::string& path) override { return base_.size(path); }
  std::vector<std::string> list(const std::string& dir) override { return base_.list(dir); }
  bool remove(const std::string& path) override { return base_.remove(path); }
  file_result make_dir(const std::string& dir) override { return base_.make_dir(dir); }
  std::optional<std::uint64_t> free_bytes(const std::string& dir) override { return base_.free_bytes(dir); }
  std::optional<std::int64_t> modified_s(const std::string& path) override { return base_.modified_s(path); }
  bool set_modified_s(const std::string& path, std::int64_t seconds) override {
    return base_.set_modified_s(path, seconds);
  }
  io_ticket submit_read(const std::string& path, std::size_t n) override;
  file_result wait_read(io_ticket ticket, file_buffer& out) override;
  io_ticket submit_write_atomic(const std::string& dir, const std::string& name,
                                const std::vector<file_piece>& pieces) override;
  file_result wait_write(io_ticket ticket) override;

 private:
  // One asynchronous operation: the base's ticket, or the outcome already decided.
  struct pending {
    io_ticket base;
    file_result outcome;
    std::size_t n = 0;
    std::string path;
  };
  bool read_faults_apply(const std::string& path) const {
    return read_fault_path_.empty() || path == read_fault_path_;
  }
  bool write_fault_armed() const { return space_left_ || crash_after_ || fail_dir_sync_; }
  io_ticket add(pending p);

  static constexpr std::uint64_t all_bytes = ~std::uint64_t{0};

  file_env& base_;
  fault_counters counters_;
  std::optional<std::uint64_t> space_left_;   // no_space_after's remaining allowance
  int read_error_ = 0;                        // fail_reads' errno; 0 when off
  std::optional<std::uint64_t> crash_after_;  // bytes the next write keeps before "crashing"
  std::optional<std::uint64_t> flip_byte_;    // flip_bit_on_read's file offset
  unsigned flip_bit_ = 0;
  bool fail_dir_sync_ = false;
  std::string read_fault_path_;               // read_faults_only_for's path; empty: every read
  std::map<std::uint64_t, pending> pending_;  // by this env's ticket id
  std::uint64_t next_ticket_ = 1;
};

}  // namespace anchorage
