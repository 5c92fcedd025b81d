#pragma once
// What the fuzz targets share (docs/FUZZING.md): a check that stops the run with a message when an
// invariant breaks, and an input held in a memfd for the readers that want a path.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace anchorage::fuzz {

// Stops the run (libFuzzer keeps the input as a crash) when `ok` is false.
inline void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

// An exception a target's contract does not allow: stops the run naming it.
[[noreturn]] inline void unexpected_exception(const char* what) {
  std::fprintf(stderr, "fuzz: undocumented exception: %s\n", what);
  std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input as a file: an anonymous memfd named by its /proc/self/fd path, closed with the object.
// Readers open the path themselves (open, mmap, ifstream).
class memfd_file {
 public:
  memfd_file(const std::uint8_t* data, std::size_t size) {
    fd_ = memfd_create("anchorage-fuzz", MFD_CLOEXEC);
    check(fd_ >= 0, "memfd_create failed");
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      check(n > 0, "write to the memfd failed");
      done += static_cast<std::size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~memfd_file() { ::close(fd_); }
  memfd_file(const memfd_file&) = delete;
  memfd_file& operator=(const memfd_file&) = delete;

  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace anchorage::fuzz
