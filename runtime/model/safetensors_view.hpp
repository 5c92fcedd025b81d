#pragma once
// A safetensors file (format in safetensors.hpp) memory-mapped and read tensor by tensor: the
// header is parsed once, each tensor is converted to float straight from the mapping, and its
// pages can be dropped afterwards, so reading a file never needs a second copy of it in memory.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/tensor.hpp"
#include "runtime/model/mapped_file.hpp"
#include "runtime/model/safetensors.hpp"

namespace anchorage {

// One header entry. `dtype` is as written ("BF16", "F32", "I8", ...); begin and end are byte
// offsets from the start of the file (not of the data buffer).
struct safetensors_entry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// True for the dtypes read() converts: F32, F16, BF16.
bool is_float_dtype(const std::string& dtype);

// Not thread-safe to release(); read() may run concurrently on different entries.
class safetensors_view {
 public:
  // Maps `path` and checks its header as load_safetensors does, except that any dtype is
  // accepted here (the dtypes of the safetensors format have their byte length checked; an
  // unknown dtype string only its bounds). Throws safetensors_error whose message starts with
  // "safetensors file '<path>': "; offsets past the end of the file say the file is truncated.
  static safetensors_view open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  // In header (name) order.
  const std::vector<safetensors_entry>& entries() const { return entries_; }
  // The entry named `name`, or null.
  const safetensors_entry* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The entry's values as float32 (F16 and BF16 exactly). Throws safetensors_error naming the
  // file, the tensor and the dtype for any other dtype.
  tensor read(const safetensors_entry& e) const;
  // The entry's bytes as stored, inside the mapping (valid while this view lives); the pages are
  // advised for reuse (they will be read again and again, not once front to back).
  const unsigned char* bytes(const safetensors_entry& e) const;
  // Drops the entry's whole pages from the resident set (see mapped_file::release).
  void release(const safetensors_entry& e) const;

 private:
  mapped_file file_;
  std::vector<safetensors_entry> entries_;
  std::map<std::string, std::size_t> by_name_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace anchorage
