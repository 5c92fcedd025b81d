#pragma once
// What uring_env.cpp (the synchronous paths) and uring_env_async.cpp (submission ahead) share:
// O_DIRECT alignment, errno to file_result, opening with the O_DIRECT fallback, the one-entry
// submit and wait on a ring, a directory fsync. Private to those two files.
#include <fcntl.h>
#include <sys/stat.h>
#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "runtime/io/file_env.hpp"

namespace anchorage {
namespace uring_detail {

constexpr std::uint64_t align_bytes = 4096;  // O_DIRECT alignment of offsets, lengths, buffers

inline std::uint64_t round_down(std::uint64_t v) { return v & ~(align_bytes - 1); }
inline std::uint64_t round_up(std::uint64_t v) { return round_down(v + align_bytes - 1); }

inline file_result os_failure(int err, const std::string& step, const std::string& path) {
  return file_result::failure(err, step + " " + path + ": " + std::strerror(err));
}

// open(2) with O_CLOEXEC, plus O_DIRECT when `direct`; a file system refusing O_DIRECT
// (EINVAL) turns `direct` off and the file is opened buffered.
inline int open_file(const std::string& path, int flags, bool& direct) {
  // A file it creates is the owner's alone (0600), whatever the umask: the cache holds what
  // clients sent.
  auto owned = [&](int fd) {
    if (fd >= 0 && (flags & O_CREAT) != 0 && ::fchmod(fd, 0600) != 0) {
      const int err = errno;
      ::close(fd);
      errno = err;
      return -1;
    }
    return fd;
  };
  if (direct) {
    const int fd = ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EINVAL) return owned(fd);
    direct = false;
  }
  return owned(::open(path.c_str(), flags | O_CLOEXEC, 0600));
}

// Closes on scope exit; close() closes now and returns 0 or the errno of close(2).
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
  int close() { return ::close(std::exchange(fd, -1)) == 0 ? 0 : errno; }
};

// Submits the one prepared entry: 0 or an errno.
inline int submit_one(io_uring* ring) {
  const int r = io_uring_submit(ring);
  return r == 1 ? 0 : (r < 0 ? -r : EIO);
}

// Waits for one completion (retrying EINTR): 0 and its user data and result, or the wait's errno.
inline int wait_one(io_uring* ring, std::uintptr_t& data, int& res) {
  io_uring_cqe* cqe = nullptr;
  int r;
  do r = io_uring_wait_cqe(ring, &cqe);
  while (r == -EINTR);
  if (r < 0) return -r;
  data = reinterpret_cast<std::uintptr_t>(io_uring_cqe_get_data(cqe));
  res = cqe->res;
  io_uring_cqe_seen(ring, cqe);
  return 0;
}

inline file_result sync_dir(const std::string& dir) {
  fd_guard d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0) return os_failure(errno, "open directory", dir);
  if (::fsync(d.fd) != 0) return os_failure(errno, "fsync directory", dir);
  if (const int err = d.close()) return os_failure(err, "close directory", dir);
  return file_result::success();
}

}  // namespace uring_detail
}  // namespace anchorage
