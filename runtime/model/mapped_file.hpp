#pragma once
// A whole file mapped read-only into memory (mmap), so that a multi-gigabyte checkpoint is read
// from the page cache as it is converted instead of being copied into a buffer first.
#include <cstddef>
#include <cstdint>
#include <string>

namespace anchorage {

// Read-only, private mapping of one regular file, unmapped on destruction. Movable, not copyable.
//
// open() throws std::runtime_error naming the path and strerror when the file cannot be opened,
// is not a regular file or cannot be mapped. A zero-byte file is valid: size() 0, data() null.
// The mapping is advised MADV_SEQUENTIAL (read-ahead, pages dropped behind the reader).
//
// The file must not shrink while it is mapped: touching a page past its new end raises SIGBUS.
// Checkpoints are immutable once written, which is what this class is for.
// Thread safety: data() may be read from several threads; release() is not synchronised.
class mapped_file {
 public:
  static mapped_file open(const std::string& path);

  mapped_file() = default;
  ~mapped_file();
  mapped_file(mapped_file&& other) noexcept;
  mapped_file& operator=(mapped_file&& other) noexcept;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;

  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Tells the kernel that bytes [offset, offset + length) will not be read again (MADV_DONTNEED
  // on the whole pages inside the range), so they leave this process's resident set. The data
  // stays readable: a later read faults the page back in from the file. Best effort, no error.
  void release(std::size_t offset, std::size_t length) const;
  // Advises bytes [offset, offset + length) for normal use again (MADV_NORMAL on the pages that
  // hold them): bytes read again and again, such as weights kept as stored. Best effort, no error.
  void reuse(std::size_t offset, std::size_t length) const;

 private:
  std::string path_;
  unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace anchorage
