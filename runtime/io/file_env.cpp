#include "runtime/io/file_env.hpp"

#include <cstring>

namespace anchorage {

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

bool is_tmp_name(const std::string& name) {
  const std::size_t n = std::strlen(tmp_suffix);
  return name.size() >= n && name.compare(name.size() - n, n, tmp_suffix) == 0;
}

}  // namespace anchorage
