#include "runtime/suffix/suffix_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "runtime/io/file_env.hpp"

namespace anchorage::suffix_file {
namespace {

status os_failure(const char* step, const std::string& path, int error) {
  return status::failure(std::string(step) + " " + path + ": " + std::strerror(error));
}

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

status write_all(int fd, const unsigned char* p, std::size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return os_failure("write", path, errno);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return status::ok();
}

status sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return os_failure("open", dir, errno);
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  return rc == 0 ? status::ok() : os_failure("fsync", dir, error);
}

// Writes `bytes` to path.tmp (0600), fsyncs it and renames it to path, then fsyncs the directory.
status write_replacing(const std::string& path, const std::vector<unsigned char>& bytes) {
  const std::string tmp = path + tmp_suffix;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return os_failure("open", tmp, errno);
  status s = write_all(fd, bytes.data(), bytes.size(), tmp);
  if (s && ::fsync(fd) != 0) s = os_failure("fsync", tmp, errno);
  ::close(fd);
  if (s && ::rename(tmp.c_str(), path.c_str()) != 0) s = os_failure("rename", tmp, errno);
  if (!s) {
    ::unlink(tmp.c_str());
    return s;
  }
  return sync_directory(parent_of(path));
}

}  // namespace

expected<directory_report> prepare_directory(const std::string& dir) {
  directory_report report;
  // Parents first, each 0700 when this call creates it.
  for (std::size_t at = 1; at < dir.size(); ++at) {
    if (dir[at] != '/') continue;
    const std::string parent = dir.substr(0, at);
    if (::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) return os_failure("mkdir", parent, errno);
  }
  if (::mkdir(dir.c_str(), 0700) == 0)
    report.created = true;
  else if (errno != EEXIST)
    return os_failure("mkdir", dir, errno);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return os_failure("lstat", dir, errno);
  if (S_ISLNK(st.st_mode)) return status::failure("suffix store " + dir + ": a symbolic link, refused");
  if (!S_ISDIR(st.st_mode)) return status::failure("suffix store " + dir + ": not a directory");
  if (st.st_uid != ::geteuid())
    return status::failure("suffix store " + dir + ": owned by another user, refused");
  if ((st.st_mode & 0777) != 0700) {
    if (::chmod(dir.c_str(), 0700) != 0) return os_failure("chmod 0700", dir, errno);
    report.tightened = !report.created;
  }
  return report;
}

log_handle::~log_handle() {
  if (fd_ >= 0) ::close(fd_);
}

log_handle::log_handle(log_handle&& o) noexcept { *this = std::move(o); }

log_handle& log_handle::operator=(log_handle&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    size_ = std::exchange(o.size_, 0);
    tightened_ = o.tightened_;
  }
  return *this;
}

expected<log_handle> log_handle::open(const std::string& path, const std::vector<unsigned char>& initial) {
  // A kill -9 inside a replace (the first creation, a forget's rewrite) leaves path.tmp beside
  // the whole old or new log: an orphan, nothing reads it. Removed (the name itself, never what
  // a link points to) so that no dead write outlives the restart.
  const std::string tmp = path + tmp_suffix;
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) return os_failure("unlink", tmp, errno);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return os_failure("lstat", path, errno);
    if (status s = write_replacing(path, initial); !s) return s;
  }
  log_handle h;
  h.path_ = path;
  h.fd_ = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (h.fd_ < 0) return os_failure("open", path, errno);
  if (::fstat(h.fd_, &st) != 0) return os_failure("fstat", path, errno);
  if (!S_ISREG(st.st_mode)) return status::failure("suffix store " + path + ": not a regular file");
  if (st.st_uid != ::geteuid())
    return status::failure("suffix store " + path + ": owned by another user, refused");
  if ((st.st_mode & 0777) != 0600) {
    if (::fchmod(h.fd_, 0600) != 0) return os_failure("chmod 0600", path, errno);
    h.tightened_ = true;
  }
  h.size_ = static_cast<std::uint64_t>(st.st_size);
  return h;
}

expected<std::vector<unsigned char>> log_handle::read_all() const {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size_));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t r = ::pread(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return os_failure("read", path_, errno);
    if (r == 0) return status::failure("read " + path_ + ": shorter than its size");
    done += static_cast<std::size_t>(r);
  }
  return bytes;
}

status log_handle::truncate(std::uint64_t bytes) {
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) return os_failure("ftruncate", path_, errno);
  if (::fsync(fd_) != 0) return os_failure("fsync", path_, errno);
  size_ = bytes;
  return status::ok();
}

status log_handle::append(const std::vector<unsigned char>& bytes, bool sync) {
  if (fd_ < 0) return status::failure("suffix store " + path_ + ": closed after a failed write");
  status s = write_all(fd_, bytes.data(), bytes.size(), path_);
  if (s && sync && ::fdatasync(fd_) != 0) s = os_failure("fdatasync", path_, errno);
  if (s) {
    size_ += bytes.size();
    return s;
  }
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
  return s;
}

status log_handle::replace(const std::vector<unsigned char>& bytes) {
  if (status s = write_replacing(path_, bytes); !s) return s;
  const int fd = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    return os_failure("open", path_, error);
  }
  ::close(fd_);
  fd_ = fd;
  size_ = bytes.size();
  return status::ok();
}

}  // namespace anchorage::suffix_file
