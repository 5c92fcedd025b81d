#include "runtime/model/gguf_file.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <tuple>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/dequantize.hpp"
#include "kernels/weight_type.hpp"
#include "runtime/model/gguf_format.hpp"
#include "runtime/model/loaded_model.hpp"

namespace anchorage {
namespace {

using namespace gguf_detail;

// A bounds-checked cursor over the mapped header.
struct cursor {
  const unsigned char* p;
  std::size_t size;
  std::size_t pos = 0;
  const std::string& path;

  [[noreturn]] void truncated(const std::string& what) const {
    throw model_load_error(path + ": truncated GGUF file (at byte " + std::to_string(pos) + ", reading " +
                           what + ")");
  }
  const unsigned char* take(std::size_t n, const std::string& what) {
    if (n > size - pos) truncated(what);
    const unsigned char* at = p + pos;
    pos += n;
    return at;
  }
  std::uint64_t uint(std::size_t bytes, const std::string& what) {
    const unsigned char* b = take(bytes, what);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) v |= std::uint64_t(b[i]) << (8 * i);
    return v;
  }
  std::uint32_t u32(const std::string& what) { return static_cast<std::uint32_t>(uint(4, what)); }
  std::uint64_t u64(const std::string& what) { return uint(8, what); }
  std::string str(const std::string& what) {
    const std::uint64_t n = u64(what);
    if (n > size - pos) truncated(what);
    const unsigned char* b = take(static_cast<std::size_t>(n), what);
    return std::string(reinterpret_cast<const char*>(b), static_cast<std::size_t>(n));
  }
};

void read_scalar(cursor& c, gguf_type t, gguf_value& v, const std::string& what) {
  const std::uint64_t raw = c.uint(scalar_size(t), what);
  v.type = t;
  switch (t) {
    case gguf_type::int8:
      v.i = static_cast<std::int8_t>(raw);
      break;
    case gguf_type::int16:
      v.i = static_cast<std::int16_t>(raw);
      break;
    case gguf_type::int32:
      v.i = static_cast<std::int32_t>(raw);
      break;
    case gguf_type::int64:
      v.i = static_cast<std::int64_t>(raw);
      break;
    case gguf_type::float32:
      v.f = bits_float(static_cast<std::uint32_t>(raw));
      break;
    case gguf_type::float64: {
      double d;
      std::memcpy(&d, &raw, 8);
      v.f = d;
      break;
    }
    default:  // unsigned integers and bool
      v.i = static_cast<std::int64_t>(raw);
  }
}

gguf_value read_value(cursor& c, std::uint32_t type, const std::string& key) {
  const std::string what = "metadata '" + key + "'";
  if (!known_type(type))
    throw model_load_error(c.path + ": metadata '" + key + "' has unknown value type " +
                           std::to_string(type));
  gguf_value v;
  const auto t = static_cast<gguf_type>(type);
  if (t == gguf_type::string) {
    v.type = t;
    v.s = c.str(what);
    return v;
  }
  if (t != gguf_type::array) {
    read_scalar(c, t, v, what);
    return v;
  }
  v.type = gguf_type::array;
  const std::uint32_t elem = c.u32(what);
  if (!known_type(elem) || elem == static_cast<std::uint32_t>(gguf_type::array))
    throw model_load_error(c.path + ": metadata '" + key + "' is an array of unsupported type " +
                           std::to_string(elem));
  v.elem = static_cast<gguf_type>(elem);
  const std::uint64_t n = c.u64(what);
  // Every element takes at least one byte: a count beyond the file is a truncation, not an allocation.
  if (n > c.size - c.pos) c.truncated(what);
  const auto count = static_cast<std::size_t>(n);
  if (v.elem == gguf_type::string) {
    v.strings.reserve(count);
    for (std::size_t i = 0; i < count; ++i) v.strings.push_back(c.str(what));
  } else {
    gguf_value e;
    const bool floating = v.elem == gguf_type::float32 || v.elem == gguf_type::float64;
    if (floating)
      v.floats.reserve(count);
    else
      v.ints.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      read_scalar(c, v.elem, e, what);
      if (floating)
        v.floats.push_back(e.f);
      else
        v.ints.push_back(e.i);
    }
  }
  return v;
}

// ne0 (1 for a 0-D tensor) and the number of rows (the product of the other dimensions).
void rows_of(const gguf_tensor_info& info, std::uint64_t* ne0, std::uint64_t* rows) {
  *ne0 = info.ne.empty() ? 1 : static_cast<std::uint64_t>(info.ne[0]);
  *rows = 1;
  for (std::size_t d = 1; d < info.ne.size(); ++d) *rows *= static_cast<std::uint64_t>(info.ne[d]);
}

// "Q8_0, ne [64, 16]"
std::string describe(const gguf_tensor_info& info) {
  std::string ne;
  for (std::int64_t d : info.ne) ne += (ne.empty() ? "" : ", ") + std::to_string(d);
  return ggml_type_name(info.type) + ", ne [" + ne + "]";
}

// The tensor's bytes when its type is one Anchorage reads and its ne0 fills the type's blocks;
// false otherwise (check_readable says why). `overflow` is set when the size exceeds 64 bits.
bool tensor_bytes(const gguf_tensor_info& info, std::uint64_t* row, std::uint64_t* rows, bool* overflow) {
  *overflow = false;
  const auto wt = kernels::weight_type_from_ggml(info.type);
  if (!wt) return false;
  std::uint64_t ne0 = 0;
  rows_of(info, &ne0, rows);
  if (ne0 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
  const auto rb = kernels::row_bytes(*wt, static_cast<std::int64_t>(ne0));
  if (!rb) return false;
  *row = static_cast<std::uint64_t>(*rb);
  *overflow = *rows != 0 && *row > std::numeric_limits<std::uint64_t>::max() / *rows;
  return true;
}

}  // namespace

const char* to_string(gguf_type t) {
  static const char* names[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                "bool",  "string", "array",  "uint64", "int64",  "float64"};
  const auto i = static_cast<std::uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

std::string ggml_type_name(std::uint32_t type) {
  static const char* names[] = {
      "F32",      "F16",      "Q4_0",    "Q4_1",  "Q4_2",       "Q4_3",       "Q5_0",       "Q5_1",
      "Q8_0",     "Q8_1",     "Q2_K",    "Q3_K",  "Q4_K",       "Q5_K",       "Q6_K",       "Q8_K",
      "IQ2_XXS",  "IQ2_XS",   "IQ3_XXS", "IQ1_S", "IQ4_NL",     "IQ3_S",      "IQ2_S",      "IQ4_XS",
      "I8",       "I16",      "I32",     "I64",   "F64",        "IQ1_M",      "BF16",       "Q4_0_4_4",
      "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",   "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};
  if (type < sizeof(names) / sizeof(names[0])) return names[type];
  return "type " + std::to_string(type);
}

std::string ggml_type_llama_name(std::uint32_t type) {
  std::string n = ggml_type_name(type);
  if (n.compare(0, 5, "type ") == 0) return n;
  for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // ggml keeps the K of the k-quants upper case: q2_K .. q8_K.
  if (n.size() > 2 && n.compare(n.size() - 2, 2, "_k") == 0) n.back() = 'K';
  return n;
}

gguf_value gguf_value::u32(std::uint32_t v) {
  gguf_value x;
  x.type = gguf_type::uint32;
  x.i = v;
  return x;
}
gguf_value gguf_value::i32(std::int32_t v) {
  gguf_value x;
  x.type = gguf_type::int32;
  x.i = v;
  return x;
}
gguf_value gguf_value::f32(float v) {
  gguf_value x;
  x.type = gguf_type::float32;
  x.f = v;
  return x;
}
gguf_value gguf_value::boolean(bool v) {
  gguf_value x;
  x.type = gguf_type::boolean;
  x.i = v ? 1 : 0;
  return x;
}
gguf_value gguf_value::str(std::string v) {
  gguf_value x;
  x.type = gguf_type::string;
  x.s = std::move(v);
  return x;
}
gguf_value gguf_value::int_array(gguf_type elem, std::vector<std::int64_t> v) {
  gguf_value x;
  x.type = gguf_type::array;
  x.elem = elem;
  x.ints = std::move(v);
  return x;
}
gguf_value gguf_value::bool_array(const std::vector<bool>& v) {
  std::vector<std::int64_t> ints(v.begin(), v.end());
  return int_array(gguf_type::boolean, std::move(ints));
}
gguf_value gguf_value::str_array(std::vector<std::string> v) {
  gguf_value x;
  x.type = gguf_type::array;
  x.elem = gguf_type::string;
  x.strings = std::move(v);
  return x;
}

bool gguf_value::is_integer() const {
  return type != gguf_type::array && type != gguf_type::string && !is_float();
}
bool gguf_value::is_float() const { return type == gguf_type::float32 || type == gguf_type::float64; }

gguf_reader::gguf_reader(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw model_load_error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw model_load_error(path + ": cannot stat: " + std::strerror(errno));
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      ::close(fd);
      throw model_load_error(path + ": cannot mmap: " + std::strerror(errno));
    }
    base_ = static_cast<const unsigned char*>(m);
  }
  ::close(fd);
  try {
    cursor c{base_, size_, 0, path_};
    if (c.u32("the magic") != gguf_magic) throw model_load_error(path + ": not a GGUF file (bad magic)");
    version_ = c.u32("the version");
    if (version_ != 2 && version_ != 3)
      throw model_load_error(path + ": GGUF version " + std::to_string(version_) +
                             " is not supported (2 or 3)");
    const std::uint64_t n_tensors = c.u64("the tensor count");
    const std::uint64_t n_kv = c.u64("the metadata count");
    for (std::uint64_t k = 0; k < n_kv; ++k) {
      std::string key = c.str("a metadata key");
      const std::uint32_t type = c.u32("metadata '" + key + "'");
      gguf_value v = read_value(c, type, key);
      if (!kv_.emplace(key, std::move(v)).second)
        throw model_load_error(path + ": duplicate metadata key '" + key + "'");
    }
    if (const gguf_value* a = find("general.alignment")) {
      if (!a->is_integer() || a->i <= 0 || (a->i & (a->i - 1)) != 0)
        throw model_load_error(path + ": general.alignment must be a positive power of two");
      alignment_ = static_cast<std::uint64_t>(a->i);
    }
    for (std::uint64_t t = 0; t < n_tensors; ++t) {
      gguf_tensor_info info;
      info.name = c.str("a tensor name");
      const std::string what = "tensor info '" + info.name + "'";
      const std::uint32_t n_dims = c.u32(what);
      if (n_dims > 4)
        throw model_load_error(path + ": tensor '" + info.name + "' has " + std::to_string(n_dims) +
                               " dimensions");
      for (std::uint32_t d = 0; d < n_dims; ++d) info.ne.push_back(static_cast<std::int64_t>(c.u64(what)));
      info.type = c.u32(what);
      info.offset = c.u64(what);
      if (!by_name_.emplace(info.name, infos_.size()).second)
        throw model_load_error(path + ": duplicate tensor '" + info.name + "'");
      infos_.push_back(std::move(info));
    }
    data_start_ = align_up(c.pos, alignment_);
    // (offset, end, index) of every tensor whose size is known, to find one running into the next.
    std::vector<std::tuple<std::uint64_t, std::uint64_t, std::size_t>> extents;
    for (std::size_t k = 0; k < infos_.size(); ++k) {
      const auto& info = infos_[k];
      // Every dimension's product (zero dimensions aside, as a product may take them in any
      // order) within 2^61 values, so that no size or element count of a tensor wraps, whatever its
      // type (at most 4 bytes a value).
      std::uint64_t values = 1;
      for (std::int64_t d : info.ne) {
        if (d < 0) throw model_load_error(path + ": tensor '" + info.name + "' has a negative dimension");
        if (d != 0 && (__builtin_mul_overflow(values, static_cast<std::uint64_t>(d), &values) ||
                       values > (std::uint64_t{1} << 61)))
          throw model_load_error(path + ": tensor '" + info.name + "' of type " + describe(info) +
                                 " has more than 2^61 values");
      }
      if (info.offset % alignment_ != 0)
        throw model_load_error(path + ": tensor '" + info.name + "' is not aligned to " +
                               std::to_string(alignment_));
      if (data_start_ > size_ || info.offset > size_ - data_start_)
        throw model_load_error(path + ": truncated GGUF file (tensor '" + info.name +
                               "' starts past the end)");
      // A type Anchorage does not read, or an ne0 that does not fill its blocks, has no size here:
      // check_readable refuses such a tensor before anything reads it.
      std::uint64_t row = 0, rows = 0;
      bool overflow = false;
      if (!tensor_bytes(info, &row, &rows, &overflow)) continue;
      const std::uint64_t room = size_ - data_start_ - info.offset;
      if (overflow || row * rows > room)
        throw model_load_error(
            path + ": truncated GGUF file (tensor '" + info.name + "' of type " + describe(info) + ": " +
            std::to_string(rows) + " rows of " + std::to_string(row) +
            " bytes = " + (overflow ? std::string("more than 2^64") : std::to_string(row * rows)) +
            " bytes, but " + std::to_string(room) + " bytes remain after its offset)");
      extents.emplace_back(info.offset, info.offset + row * rows, k);
    }
    std::sort(extents.begin(), extents.end());
    for (std::size_t k = 0; k + 1 < extents.size(); ++k) {
      const auto& [at, end, i] = extents[k];
      const auto& [next_at, next_end, j] = extents[k + 1];
      (void)next_end;
      if (end > next_at)
        throw model_load_error(path + ": tensor '" + infos_[i].name + "' of type " + describe(infos_[i]) +
                               " (" + std::to_string(end - at) + " bytes at data offset " +
                               std::to_string(at) + ") runs into tensor '" + infos_[j].name +
                               "' at data offset " + std::to_string(next_at));
    }
  } catch (...) {
    if (base_ != nullptr) ::munmap(const_cast<unsigned char*>(base_), size_);
    base_ = nullptr;
    throw;
  }
}

gguf_reader::~gguf_reader() {
  if (base_ != nullptr) ::munmap(const_cast<unsigned char*>(base_), size_);
}

const gguf_value* gguf_reader::find(const std::string& key) const {
  const auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const gguf_tensor_info* gguf_reader::find_tensor(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &infos_[it->second];
}

void gguf_reader::check_readable(const gguf_tensor_info& info) const {
  const std::string type = ggml_type_name(info.type);
  const std::string llama = ggml_type_llama_name(info.type);
  const auto wt = kernels::weight_type_from_ggml(info.type);
  if (!wt) {
    const std::string named =
        type.compare(0, 5, "type ") == 0
            ? "unknown ggml " + type
            : "type " + type + " (llama.cpp's " + llama + ", ggml type " + std::to_string(info.type) + ")";
    throw model_load_error(path_ + ": tensor '" + info.name + "' has " + named +
                           ", which Anchorage does not read (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, "
                           "Q5_K, Q6_K)");
  }
  std::uint64_t ne0 = 0, rows = 0;
  rows_of(info, &ne0, &rows);
  const int block = kernels::block_elements(*wt);
  if (ne0 % static_cast<std::uint64_t>(block) != 0)
    throw model_load_error(path_ + ": tensor '" + info.name + "' has type " + type + " (llama.cpp's " +
                           llama + ") with ne0 " + std::to_string(ne0) + ", not a multiple of its " +
                           std::to_string(block) + "-value blocks");
  if (ne0 > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    throw model_load_error(path_ + ": tensor '" + info.name + "' has rows of " + std::to_string(ne0) +
                           " values, more than Anchorage converts in one row");
}

const unsigned char* gguf_reader::bytes(const gguf_tensor_info& info) const {
  check_readable(info);
  return base_ + data_start_ + info.offset;
}

tensor gguf_reader::read(const std::string& name) const {
  const gguf_tensor_info* info = find_tensor(name);
  if (info == nullptr) throw model_load_error(path_ + ": missing tensor '" + name + "'");
  check_readable(*info);
  // The constructor checked that these bytes lie inside the file (check_readable passing means
  // the size was known there).
  const kernels::weight_type wt = *kernels::weight_type_from_ggml(info->type);
  std::uint64_t ne0 = 0, rows = 0;
  rows_of(*info, &ne0, &rows);
  const auto row = static_cast<std::size_t>(*kernels::row_bytes(wt, static_cast<std::int64_t>(ne0)));
  tensor t;
  t.shape = info->shape();
  t.data.resize(static_cast<std::size_t>(t.numel()));
  if (ne0 == 0) return t;
  const unsigned char* p = base_ + data_start_ + info->offset;
  for (std::size_t r = 0; r < rows; ++r)
    kernels::dequantize_row(wt, p + r * row, t.data.data() + r * ne0, static_cast<int>(ne0));
  return t;
}

}  // namespace anchorage
