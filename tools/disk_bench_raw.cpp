#include "tools/disk_bench_raw.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "runtime/io/file_env.hpp"

namespace anchorage::raw_io {

aligned_bytes aligned_alloc_bytes(std::size_t n) {
  void* p = nullptr;
  if (::posix_memalign(&p, align, n) != 0) return nullptr;
  return aligned_bytes(static_cast<unsigned char*>(p));
}

void fill_random(unsigned char* p, std::size_t n, std::uint64_t x) {
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = static_cast<unsigned char>(x >> 32);
  }
}

bool raw_write(const std::string& path, const unsigned char* src, std::size_t n) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const std::size_t padded = round_up(n);
  bool ok = true;
  for (std::size_t off = 0; ok && off < padded; off += raw_block) {
    const std::size_t len = std::min(raw_block, padded - off);
    ok = ::pwrite(fd, src + off, len, static_cast<off_t>(off)) == static_cast<ssize_t>(len);
  }
  ok = ok && ::ftruncate(fd, static_cast<off_t>(n)) == 0 && ::fsync(fd) == 0;
  return ::close(fd) == 0 && ok;
}

bool raw_read(const std::string& path, unsigned char* dst, std::size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return false;
  const std::size_t padded = round_up(n);
  bool ok = true;
  for (std::size_t off = 0; ok && off < padded; off += raw_block) {
    const std::size_t len = std::min(raw_block, padded - off);
    const ssize_t got = ::pread(fd, dst + off, len, static_cast<off_t>(off));
    ok = got == static_cast<ssize_t>(std::min(len, n - off));
  }
  return ::close(fd) == 0 && ok;
}

bool o_direct_accepted(const std::string& dir) {
  const std::string path = anchorage::join_path(dir, "o-direct-probe");
  aligned_bytes buf = aligned_alloc_bytes(align);
  if (!buf) return false;
  std::memset(buf.get(), 0x5a, align);
  const bool ok = raw_write(path, buf.get(), align) && raw_read(path, buf.get(), align);
  ::unlink(path.c_str());
  return ok;
}

}  // namespace anchorage::raw_io
