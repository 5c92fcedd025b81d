#include "runtime/model/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace anchorage {

mapped_file mapped_file::open(const std::string& path) {
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("cannot " + what + " '" + path + "': " + std::strerror(errno));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    fail("stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error("cannot map '" + path + "': not a regular file");
  }
  mapped_file m;
  m.path_ = path;
  m.size_ = static_cast<std::size_t>(st.st_size);
  if (m.size_ > 0) {
    void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      errno = e;
      fail("map");
    }
    m.data_ = static_cast<unsigned char*>(p);
    ::madvise(p, m.size_, MADV_SEQUENTIAL);
  }
  ::close(fd);  // the mapping keeps the file open
  return m;
}

mapped_file::~mapped_file() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

mapped_file::mapped_file(mapped_file&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

mapped_file& mapped_file::operator=(mapped_file&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void mapped_file::release(std::size_t offset, std::size_t length) const {
  if (data_ == nullptr || offset >= size_) return;
  if (length > size_ - offset) length = size_ - offset;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t begin = (offset + page - 1) / page * page;
  const std::size_t end = (offset + length == size_) ? size_ : (offset + length) / page * page;
  if (end <= begin) return;
  ::madvise(data_ + begin, end - begin, MADV_DONTNEED);
}

void mapped_file::reuse(std::size_t offset, std::size_t length) const {
  if (data_ == nullptr || offset >= size_) return;
  if (length > size_ - offset) length = size_ - offset;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t begin = offset / page * page;
  ::madvise(data_ + begin, offset + length - begin, MADV_NORMAL);
}

}  // namespace anchorage
