#pragma once
// What the fuzz targets share (docs/FUZZING.md): a check that stops the run with a message when an
// invariant breaks, a route's parser held to its contract (never throws, refuses with a 400), an
// input held in a memfd for the readers that want a path, and the seed writer's switch.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

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

// Runs a route's request parser, `parse()` giving std::variant<Request, Error>: it must not
// throw, and a refusal must be a 400 with a message. The accepted request, or nullopt.
template <class Request, class Error, class Parse>
std::optional<Request> accepted_or_400(Parse&& parse) {
  std::variant<Request, Error> parsed;
  try {
    parsed = std::forward<Parse>(parse)();
  } catch (const std::exception& e) {
    unexpected_exception(e.what());
  }
  if (const auto* err = std::get_if<Error>(&parsed)) {
    check(err->status == 400, "a refused request is a 400");
    check(!err->message.empty(), "a refusal says what is wrong");
    return std::nullopt;
  }
  return std::get<Request>(std::move(parsed));
}

// ANCHORAGE_FUZZ_SEEDS=DIR: the target writes its seed files into DIR and exits (how a binary
// format's corpus in fuzz/corpus/ was made). Called from LLVMFuzzerInitialize.
inline void write_seeds_when_asked(void (*write_seeds)(const std::string& dir)) {
  if (const char* dir = std::getenv("ANCHORAGE_FUZZ_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
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
