#pragma once
// A fresh directory under the system temp directory, removed with everything in it when the
// test ends (RAII). Names carry the process id and a counter, so concurrent test runs and
// several directories in one test never collide.
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace anchorage::testing {

struct temp_dir {
  std::filesystem::path path;

  explicit temp_dir(const std::string& prefix = "anchorage-test") {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  std::string str() const { return path.string(); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace anchorage::testing
