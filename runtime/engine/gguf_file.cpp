#include "runtime/engine/gguf_file.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/engine/loaded_model.hpp"

#include "runtime/engine/gguf_format.hpp"
#include "runtime/engine/half_float.hpp"

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

std::size_t type_block(std::uint32_t type, std::size_t* bytes) {
  switch (type) {
    case 0:
      *bytes = 4;
      return 1;
    case 1:
    case 30:
      *bytes = 2;
      return 1;
    default:
      return 0;
  }
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
    for (const auto& info : infos_) {
      std::size_t bytes = 0;
      std::uint64_t n = 1;
      for (std::int64_t d : info.ne) {
        if (d < 0) throw model_load_error(path + ": tensor '" + info.name + "' has a negative dimension");
        n *= static_cast<std::uint64_t>(d);
      }
      if (info.offset % alignment_ != 0)
        throw model_load_error(path + ": tensor '" + info.name + "' is not aligned to " +
                               std::to_string(alignment_));
      // Quantized types are checked for their extent only when read; F32/F16/BF16 here.
      if (type_block(info.type, &bytes) != 0 &&
          (data_start_ + info.offset > size_ || n * bytes > size_ - data_start_ - info.offset))
        throw model_load_error(path + ": truncated GGUF file (tensor '" + info.name + "' ends past the end)");
      if (data_start_ + info.offset > size_)
        throw model_load_error(path + ": truncated GGUF file (tensor '" + info.name +
                               "' starts past the end)");
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

tensor gguf_reader::read(const std::string& name) const {
  const gguf_tensor_info* info = find_tensor(name);
  if (info == nullptr) throw model_load_error(path_ + ": missing tensor '" + name + "'");
  std::size_t bytes = 0;
  if (type_block(info->type, &bytes) == 0)
    throw model_load_error(path_ + ": tensor '" + name + "' has type " + ggml_type_name(info->type) +
                           ", which Anchorage does not read (supported: F32, F16, BF16)");
  tensor t;
  t.shape = info->shape();
  t.data.resize(static_cast<std::size_t>(t.numel()));
  const unsigned char* p = base_ + data_start_ + info->offset;
  for (std::size_t i = 0; i < t.data.size(); ++i, p += bytes) {
    if (info->type == 0) {
      t.data[i] = bits_float(std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
                             std::uint32_t(p[3]) << 24);
    } else {
      const auto h = static_cast<std::uint16_t>(p[0] | p[1] << 8);
      t.data[i] = info->type == 1 ? f16_to_float(h) : bits_float(std::uint32_t(h) << 16);
    }
  }
  return t;
}

}  // namespace anchorage
