#include "runtime/model/gguf_file.hpp"

#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

#include "kernels/quantize.hpp"
#include "kernels/weight_type.hpp"
#include "runtime/model/gguf_format.hpp"

namespace anchorage {
namespace {

using namespace gguf_detail;

// Appends little-endian bytes.
struct out_buffer {
  std::string b;
  void uint(std::uint64_t v, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i) b.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
  }
  void str(const std::string& s) {
    uint(s.size(), 8);
    b += s;
  }
  void scalar(gguf_type t, std::int64_t i, double f) {
    if (t == gguf_type::float32)
      uint(float_bits(static_cast<float>(f)), 4);
    else if (t == gguf_type::float64) {
      std::uint64_t u;
      std::memcpy(&u, &f, 8);
      uint(u, 8);
    } else {
      uint(static_cast<std::uint64_t>(i), scalar_size(t));
    }
  }
  void value(const gguf_value& v, const std::string& key) {
    uint(static_cast<std::uint32_t>(v.type), 4);
    if (v.type == gguf_type::string) return str(v.s);
    if (v.type != gguf_type::array) {
      if (scalar_size(v.type) == 0)
        throw std::invalid_argument("gguf: metadata '" + key + "' has a bad type");
      return scalar(v.type, v.i, v.f);
    }
    uint(static_cast<std::uint32_t>(v.elem), 4);
    if (v.elem == gguf_type::string) {
      uint(v.strings.size(), 8);
      for (const auto& s : v.strings) str(s);
    } else if (v.elem == gguf_type::float32 || v.elem == gguf_type::float64) {
      uint(v.floats.size(), 8);
      for (double f : v.floats) scalar(v.elem, 0, f);
    } else if (scalar_size(v.elem) != 0) {
      uint(v.ints.size(), 8);
      for (std::int64_t i : v.ints) scalar(v.elem, i, 0.0);
    } else {
      throw std::invalid_argument("gguf: metadata '" + key + "' is an array of a bad type");
    }
  }
};

[[noreturn]] void io_fail(const std::string& what, const std::string& path) {
  throw std::runtime_error("gguf: cannot " + what + " " + path + ": " + std::strerror(errno));
}

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

void save_gguf(const std::string& path, const std::vector<std::pair<std::string, gguf_value>>& metadata,
               const std::vector<gguf_tensor_out>& tensors) {
  std::uint64_t alignment = default_alignment;
  std::set<std::string> keys, names;
  out_buffer h;
  h.uint(gguf_magic, 4);
  h.uint(3, 4);
  h.uint(tensors.size(), 8);
  h.uint(metadata.size(), 8);
  for (const auto& [key, v] : metadata) {
    if (!keys.insert(key).second) throw std::invalid_argument("gguf: duplicate metadata key '" + key + "'");
    if (key == "general.alignment") {
      if (v.type != gguf_type::uint32 || v.i <= 0 || (v.i & (v.i - 1)) != 0)
        throw std::invalid_argument("gguf: general.alignment must be a uint32 power of two");
      alignment = static_cast<std::uint64_t>(v.i);
    }
    h.str(key);
    h.value(v, key);
  }
  std::uint64_t offset = 0;
  std::vector<std::uint64_t> offsets;
  struct layout {
    kernels::weight_type type;
    int ne0;
    std::uint64_t rows;
    std::size_t row_bytes;
  };
  std::vector<layout> layouts;
  for (const auto& t : tensors) {
    if (!names.insert(t.name).second) throw std::invalid_argument("gguf: duplicate tensor '" + t.name + "'");
    if (t.value == nullptr || static_cast<std::int64_t>(t.value->data.size()) != t.value->numel())
      throw std::invalid_argument("gguf: tensor '" + t.name + "' has data that does not match its shape");
    const auto wt = kernels::weight_type_from_ggml(static_cast<std::uint32_t>(t.type));
    if (!wt)
      throw std::invalid_argument("gguf: tensor '" + t.name + "' has type " +
                                  ggml_type_name(static_cast<std::uint32_t>(t.type)) +
                                  ", which the writer does not write");
    const std::int64_t ne0 = t.value->shape.empty() ? 1 : t.value->shape.back();
    const auto row = kernels::row_bytes(*wt, ne0);
    if (!row || ne0 > std::numeric_limits<int>::max())
      throw std::invalid_argument("gguf: tensor '" + t.name + "' has ne0 " + std::to_string(ne0) +
                                  ", not a multiple of the " +
                                  ggml_type_name(static_cast<std::uint32_t>(t.type)) + " block (" +
                                  std::to_string(kernels::block_elements(*wt)) + " values)");
    const std::uint64_t rows = ne0 == 0 ? 0 : static_cast<std::uint64_t>(t.value->numel() / ne0);
    layouts.push_back({*wt, static_cast<int>(ne0), rows, static_cast<std::size_t>(*row)});
    h.str(t.name);
    h.uint(t.value->shape.size(), 4);
    for (auto d = t.value->shape.rbegin(); d != t.value->shape.rend(); ++d)
      h.uint(static_cast<std::uint64_t>(*d), 8);
    h.uint(static_cast<std::uint32_t>(t.type), 4);
    h.uint(offset, 8);
    offsets.push_back(offset);
    const std::uint64_t bytes = rows * static_cast<std::uint64_t>(*row);
    offset = align_up(offset + bytes, alignment);
  }
  h.b.resize(static_cast<std::size_t>(align_up(h.b.size(), alignment)), '\0');

  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_fail("create", tmp);
  auto fail = [&](const std::string& what) {
    const int saved = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = saved;
    io_fail(what, tmp);
  };
  if (!write_all(fd, h.b.data(), h.b.size())) fail("write");
  std::uint64_t written = 0;
  std::string buf;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    buf.assign(static_cast<std::size_t>(offsets[k] - written), '\0');
    const float* data = tensors[k].value->data.data();
    const layout& l = layouts[k];
    const std::size_t pad = buf.size();
    buf.resize(pad + static_cast<std::size_t>(l.rows) * l.row_bytes);
    for (std::uint64_t r = 0; r < l.rows; ++r)
      kernels::quantize_row(l.type, data + r * static_cast<std::uint64_t>(l.ne0),
                            &buf[pad + static_cast<std::size_t>(r) * l.row_bytes], l.ne0);
    if (!write_all(fd, buf.data(), buf.size())) fail("write");
    written += buf.size();
  }
  // The last tensor is padded too, as ggml's writer does.
  buf.assign(static_cast<std::size_t>(align_up(written, alignment) - written), '\0');
  if (!write_all(fd, buf.data(), buf.size())) fail("write");
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    io_fail("close", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    io_fail("rename to", path);
  }
}

}  // namespace anchorage
