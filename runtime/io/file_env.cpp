#include "runtime/io/file_env.hpp"

#include <cstring>
#include <new>

namespace anchorage {

file_buffer::file_buffer(std::size_t n) : size_(n), capacity_((n + 4095) / 4096 * 4096) {
  if (capacity_ == 0) capacity_ = 4096;
  void* p = nullptr;
  if (::posix_memalign(&p, 4096, capacity_) != 0) throw std::bad_alloc();
  data_.reset(static_cast<unsigned char*>(p));
}

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
