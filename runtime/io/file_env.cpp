#include "runtime/io/file_env.hpp"

#include <cstring>
#include <new>

#include "runtime/core/prefault.hpp"

namespace anchorage {

file_buffer::file_buffer(std::size_t n) : size_(n), capacity_((n + 4095) / 4096 * 4096) {
  if (capacity_ == 0) capacity_ = 4096;
  void* p = nullptr;
  // A buffer of whole huge pages' worth is placed on a huge page boundary and prefaulted: a read
  // of a spill block or an anchor (MiBs) would otherwise trap once per 4 KiB page of it, a cost
  // on the 2-core VM above that of reading the bytes (runtime/core/prefault.hpp).
  constexpr std::size_t huge = std::size_t{2} << 20;
  const std::size_t align = capacity_ >= huge ? huge : 4096;
  if (::posix_memalign(&p, align, capacity_) != 0) throw std::bad_alloc();
  data_.reset(static_cast<unsigned char*>(p));
  if (capacity_ >= huge) prefault_for_write(p, capacity_);
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
