#include "runtime/io/uring_env.hpp"

#include "runtime/io/private_dir.hpp"
#include "runtime/io/uring_detail.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <utility>

namespace anchorage {
using namespace uring_detail;

uring_env::uring_env(uring_env_options options) : options_(options) {
  assert(options_.queue_depth > 0);
  assert(options_.block_bytes > 0 && options_.block_bytes % align_bytes == 0);
  auto ring = std::make_unique<io_uring>();
  if (io_uring_queue_init(options_.queue_depth, ring.get(), 0) == 0) ring_ = std::move(ring);
}

uring_env::~uring_env() {
  for (auto& [id, op] : ops_) {  // waited for, their results discarded
    if (ring_) drain(*op);
    if (op->fd >= 0) ::close(op->fd);
    if (op->write) ::unlink(op->path.c_str());
  }
  if (ring_) io_uring_queue_exit(ring_.get());
  for (char* b : buffers_) std::free(b);
}

file_result uring_env::ensure_buffers() {
  while (buffers_.size() < options_.queue_depth) {
    void* p = nullptr;
    const int err = ::posix_memalign(&p, align_bytes, options_.block_bytes);
    if (err != 0) return os_failure(err, "posix_memalign", "(bounce buffer)");
    buffers_.push_back(static_cast<char*>(p));
  }
  return file_result::success();
}

// Moves the transfer's blocks through the ring, up to queue_depth in flight (one at a time on
// the pread/pwrite path); a short transfer is resubmitted for its remainder. On the first failed
// transfer no new block is submitted, the blocks in flight are waited for (the kernel owns their
// buffers until then), and the failure is returned. A failure of the ring itself abandons it.
file_result uring_env::pump(const transfer& t, const std::string& path) {
  struct slot {
    std::size_t k = 0, length = 0, needed = 0, done = 0;
    std::uint64_t offset = 0;
  };
  const unsigned depth = ring_ ? options_.queue_depth : 1;
  std::vector<slot> slots(depth);
  std::vector<unsigned> free_slots;
  for (unsigned i = depth; i-- > 0;) free_slots.push_back(i);
  unsigned in_flight = 0;
  int sync_res = 0;  // the pread/pwrite path's result, "completed" by the next wait
  file_result first_error;

  auto submit = [&](unsigned i) -> int {  // 0 or an errno of the submission itself
    slot& s = slots[i];
    char* buf = buffers_[i] + s.done;
    const std::size_t len = s.length - s.done;
    const std::uint64_t off = s.offset + s.done;
    if (!ring_) {
      ssize_t r;
      do r = t.write ? ::pwrite(t.fd, buf, len, off) : ::pread(t.fd, buf, len, off);
      while (r < 0 && errno == EINTR);
      sync_res = r < 0 ? -errno : static_cast<int>(r);
      return 0;
    }
    io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());  // null only if the ring is broken
    if (!sqe) return EBUSY;
    // len <= a buffer's size, which the ring's unsigned lengths hold
    if (t.write)
      io_uring_prep_write(sqe, t.fd, buf, static_cast<unsigned>(len), off);
    else
      io_uring_prep_read(sqe, t.fd, buf, static_cast<unsigned>(len), off);
    io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(static_cast<std::uintptr_t>(i)));
    return submit_one(ring_.get());
  };

  const std::uint64_t block = options_.block_bytes;
  const std::size_t blocks = t.end > t.start ? (t.end - t.start + block - 1) / block : 0;
  std::size_t next = 0;
  while (next < blocks || in_flight > 0) {
    while (first_error.ok && next < blocks && !free_slots.empty()) {
      const unsigned i = free_slots.back();
      slot& s = slots[i];
      s.k = next++;
      s.offset = t.start + s.k * block;
      s.length = static_cast<std::size_t>(std::min<std::uint64_t>(block, t.end - s.offset));
      s.needed = t.write ? s.length
                         : static_cast<std::size_t>(std::min<std::uint64_t>(
                               s.length, t.needed > s.offset ? t.needed - s.offset : 0));
      s.done = 0;
      if (t.write) t.fill(s.k, buffers_[i], s.length);
      if (const int err = submit(i)) return abandon_ring(err, "io_uring_submit", path);
      free_slots.pop_back();
      ++in_flight;
    }
    if (in_flight == 0) break;
    std::uintptr_t data = 0;
    int res = sync_res;
    if (ring_) {
      if (const int err = reap(data, res)) return abandon_ring(err, "io_uring_wait_cqe", path);
    }
    const auto i = static_cast<unsigned>(data);
    slot& s = slots[i];
    --in_flight;
    if (res < 0 || (res == 0 && s.done < s.needed)) {
      if (first_error.ok) {
        first_error = res < 0   ? os_failure(-res, t.write ? "write" : "read", path)
                      : t.write ? os_failure(EIO, "write (no progress)", path)
                                : os_failure(ERANGE, "read (the file ended early)", path);
      }
    } else if ((s.done += static_cast<std::size_t>(res)) < s.needed && first_error.ok) {
      if (const int err = submit(i)) return abandon_ring(err, "io_uring_submit", path);
      ++in_flight;  // a short transfer: the rest went again
      continue;
    } else if (!t.write && first_error.ok) {
      t.take(s.k, buffers_[i], s.needed);
    }
    free_slots.push_back(i);
  }
  return first_error;
}

// A failed submit or wait leaves the ring in an unknown state and the kernel may still own the
// bounce buffers: they are leaked on purpose, the ring is torn down, and the env goes on with
// pread/pwrite and fresh buffers. Returns the failure of `step`.
file_result uring_env::abandon_ring(int err, const std::string& step, const std::string& path) {
  if (ring_) io_uring_queue_exit(ring_.get());
  ring_.reset();
  buffers_.clear();
  // The async operations in flight fail; the kernel may still own their buffers.
  for (auto& [id, op] : ops_) {
    if (op->in_flight > 0) op->buf.leak();
    op->in_flight = 0;
    op->next = op->pieces.size();
    if (op->result.ok) op->result = os_failure(err, step, op->path);
  }
  async_in_flight_ = 0;
  return os_failure(err, step, path);
}

file_result uring_env::sync_file(int fd, const std::string& path) {
  int res = 0;
  if (!ring_) {
    res = ::fsync(fd) == 0 ? 0 : -errno;
  } else {
    io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());  // null only if the ring is broken
    if (!sqe) return abandon_ring(EBUSY, "io_uring_get_sqe", path);
    io_uring_prep_fsync(sqe, fd, 0);
    io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(fsync_tag));
    if (const int err = submit_one(ring_.get())) return abandon_ring(err, "io_uring_submit", path);
    std::uintptr_t data = 0;
    if (const int err = reap(data, res)) return abandon_ring(err, "io_uring_wait_cqe", path);
  }
  return res < 0 ? os_failure(-res, "fsync", path) : file_result::success();
}

// Writes the pieces to `tmp` (created or truncated) and fsyncs it; does not remove it on failure.
file_result uring_env::write_tmp(const std::string& tmp, bool direct, const std::vector<file_piece>& pieces,
                                 std::uint64_t total) {
  fd_guard f{open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC, direct)};
  if (f.fd < 0) return os_failure(errno, "open", tmp);
  std::size_t piece = 0, piece_offset = 0;  // the next byte to copy into a block
  transfer t;
  t.fd = f.fd;
  t.write = true;
  t.end = direct ? round_up(total) : total;
  t.fill = [&](std::size_t, char* buf, std::size_t len) {
    std::size_t filled = 0;
    while (filled < len && piece < pieces.size()) {
      const auto& [data, bytes] = pieces[piece];
      const std::size_t n = std::min(len - filled, bytes - piece_offset);
      if (n > 0) std::memcpy(buf + filled, static_cast<const char*>(data) + piece_offset, n);
      filled += n;
      piece_offset += n;
      if (piece_offset == bytes) ++piece, piece_offset = 0;
    }
    std::memset(buf + filled, 0, len - filled);  // O_DIRECT padding of the tail
  };
  if (auto r = pump(t, tmp); !r) return r;
  if (t.end != total && ::ftruncate(f.fd, static_cast<off_t>(total)) != 0) {
    return os_failure(errno, "ftruncate", tmp);
  }
  if (auto r = sync_file(f.fd, tmp); !r) return r;
  if (const int err = f.close()) return os_failure(err, "close", tmp);
  return file_result::success();
}

file_result uring_env::write_atomic(const std::string& dir, const std::string& name,
                                    const std::vector<file_piece>& pieces) {
  assert(!name.empty() && name.find('/') == std::string::npos);
  std::uint64_t total = 0;
  for (const auto& [data, bytes] : pieces) {
    assert(data != nullptr || bytes == 0);
    total += bytes;
  }
  if (auto r = ensure_buffers(); !r) return r;
  const std::string tmp = join_path(dir, name + tmp_suffix);
  const std::string final_path = join_path(dir, name);
  file_result r = write_tmp(tmp, options_.direct, pieces, total);
  if (!r && options_.direct && r.error == EINVAL) r = write_tmp(tmp, false, pieces, total);
  if (!r) {
    ::unlink(tmp.c_str());  // best effort; ENOENT when open itself failed
    return r;
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return os_failure(err, "rename to " + final_path + " from", tmp);
  }
  return sync_dir(dir.empty() ? "." : dir);
}

// One attempt at read(): `direct` says whether to try O_DIRECT.
file_result uring_env::read_once(const std::string& path, bool direct, std::uint64_t offset, void* dst,
                                 std::size_t n) {
  fd_guard f{open_file(path, O_RDONLY, direct)};
  if (f.fd < 0) return os_failure(errno, "open", path);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return os_failure(errno, "fstat", path);
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (offset > file_size || n > file_size - offset) {
    return os_failure(ERANGE, "read past the end (" + std::to_string(file_size) + " bytes) of", path);
  }
  transfer t;
  t.fd = f.fd;
  t.needed = offset + n;
  t.start = direct ? round_down(offset) : offset;
  t.end = n == 0 ? t.start : direct ? round_up(offset + n) : offset + n;
  t.take = [&](std::size_t k, const char* buf, std::size_t len) {
    const std::uint64_t block_start = t.start + k * options_.block_bytes;
    const std::uint64_t from = std::max(block_start, offset);
    const std::uint64_t to = std::min(block_start + len, offset + n);
    if (to > from) {
      std::memcpy(static_cast<char*>(dst) + (from - offset), buf + (from - block_start), to - from);
    }
  };
  return pump(t, path);
}

file_result uring_env::read(const std::string& path, std::uint64_t offset, void* dst, std::size_t n) {
  assert(dst != nullptr || n == 0);
  if (auto r = ensure_buffers(); !r) return r;
  file_result r = read_once(path, options_.direct, offset, dst, n);
  if (!r && options_.direct && r.error == EINVAL) r = read_once(path, false, offset, dst, n);
  return r;
}

std::optional<std::uint64_t> uring_env::size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_size);
}

std::vector<std::string> uring_env::list(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool uring_env::remove(const std::string& path) { return ::unlink(path.c_str()) == 0; }

file_result uring_env::make_dir(const std::string& dir) { return make_private_dirs(dir); }

std::optional<std::uint64_t> uring_env::free_bytes(const std::string& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize;
}

std::optional<std::int64_t> uring_env::modified_s(const std::string& path) {
  struct stat s {};
  if (::stat(path.c_str(), &s) != 0) return std::nullopt;
  return static_cast<std::int64_t>(s.st_mtim.tv_sec);
}

bool uring_env::set_modified_s(const std::string& path, std::int64_t seconds) {
  struct timespec times[2];
  times[0].tv_sec = static_cast<time_t>(seconds);
  times[0].tv_nsec = 0;
  times[1] = times[0];
  return ::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0;
}

}  // namespace anchorage
