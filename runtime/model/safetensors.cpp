// Reading and writing safetensors files; see safetensors.hpp for the format and contracts.
#include "runtime/model/safetensors.hpp"

#include "runtime/model/half_float.hpp"
#include "runtime/model/safetensors_view.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace anchorage {
namespace {

using json = nlohmann::json;

// Product of `shape` into *out; false if a dimension is negative or the product overflows int64.
bool checked_numel(const std::vector<std::int64_t>& shape, std::int64_t* out) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return false;
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) return false;
    n *= d;
  }
  *out = n;
  return true;
}

std::string errno_text() { return std::strerror(errno); }

// --- writing ---------------------------------------------------------------------------------

// Writes all n bytes or returns false with errno set.
bool write_all(int fd, const void* buf, std::size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

void put_u32_le(unsigned char* out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

std::uint64_t bytes_per_value(safetensors_dtype d) { return d == safetensors_dtype::f32 ? 4 : 2; }

// Appends `count` values from `in` to `out` in dtype `d`, little-endian.
void encode(safetensors_dtype d, const float* in, std::size_t count, unsigned char* out) {
  for (std::size_t j = 0; j < count; ++j) {
    if (d == safetensors_dtype::f32) {
      std::uint32_t bits;
      std::memcpy(&bits, &in[j], 4);
      put_u32_le(&out[j * 4], bits);
    } else {
      const std::uint16_t h = d == safetensors_dtype::f16 ? float_to_f16(in[j]) : float_to_bf16(in[j]);
      out[j * 2] = static_cast<unsigned char>(h & 0xffu);
      out[j * 2 + 1] = static_cast<unsigned char>(h >> 8);
    }
  }
}

// Owns the tmp file until commit(): on destruction without commit, closes and unlinks it.
struct tmp_file_guard {
  std::string tmp_path;
  int fd = -1;
  bool committed = false;
  ~tmp_file_guard() {
    if (fd >= 0) ::close(fd);
    if (!committed) ::unlink(tmp_path.c_str());
  }
};

// The header JSON for `tensors` laid out contiguously in name order, padded to a multiple of 8.
std::string build_header(const std::string& path, const tensor_map& tensors,
                         const std::map<std::string, std::string>& metadata,
                         const safetensors_write_options& options) {
  json header = json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    std::int64_t n = 0;
    if (name == "__metadata__")
      throw std::invalid_argument("save_safetensors '" + path +
                                  "': a tensor may not be named '__metadata__'");
    if (!checked_numel(t.shape, &n) || n > std::numeric_limits<std::int64_t>::max() / 4)
      throw std::invalid_argument("save_safetensors '" + path + "': tensor '" + name +
                                  "' has invalid shape " + shape_string(t.shape));
    if (static_cast<std::uint64_t>(n) != t.data.size())
      throw std::invalid_argument("save_safetensors '" + path + "': tensor '" + name + "' holds " +
                                  std::to_string(t.data.size()) + " values, but its shape " +
                                  shape_string(t.shape) + " needs " + std::to_string(n));
    const safetensors_dtype dtype = options.dtype_of(name);
    const std::uint64_t bytes = static_cast<std::uint64_t>(n) * bytes_per_value(dtype);
    header[name] = json{{"dtype", to_string(dtype)},
                        {"shape", t.shape},
                        {"data_offsets", json::array({offset, offset + bytes})}};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    throw std::invalid_argument("save_safetensors '" + path +
                                "': tensor names and metadata must be valid UTF-8 (" + e.what() + ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace

const char* to_string(safetensors_dtype d) {
  switch (d) {
    case safetensors_dtype::f16:
      return "F16";
    case safetensors_dtype::bf16:
      return "BF16";
    case safetensors_dtype::f32:
      break;
  }
  return "F32";
}

safetensors_dtype safetensors_write_options::dtype_of(const std::string& name) const {
  const auto it = per_tensor.find(name);
  return it == per_tensor.end() ? dtype : it->second;
}

void save_safetensors(const std::string& path, const tensor_map& tensors,
                      const std::map<std::string, std::string>& metadata,
                      const safetensors_write_options& options) {
  const std::string header = build_header(path, tensors, metadata, options);
  tmp_file_guard tmp{path + ".tmp"};
  auto fail = [&](const std::string& what, const std::string& file) {
    const std::string reason = errno_text();
    throw std::runtime_error("save_safetensors: cannot " + what + " '" + file + "': " + reason);
  };

  tmp.fd = ::open(tmp.tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tmp.fd < 0) fail("create", tmp.tmp_path);

  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(header.size()) >> (8 * i));
  if (!write_all(tmp.fd, length, 8) || !write_all(tmp.fd, header.data(), header.size()))
    fail("write", tmp.tmp_path);

  constexpr std::size_t chunk_floats = 1 << 18;  // at most 1 MiB of output per write
  std::vector<unsigned char> buf;
  for (const auto& [name, t] : tensors) {
    const safetensors_dtype dtype = options.dtype_of(name);
    for (std::size_t i = 0; i < t.data.size(); i += chunk_floats) {
      const std::size_t n = std::min(chunk_floats, t.data.size() - i);
      buf.resize(n * bytes_per_value(dtype));
      encode(dtype, &t.data[i], n, buf.data());
      if (!write_all(tmp.fd, buf.data(), buf.size())) fail("write", tmp.tmp_path);
    }
  }

  if (::fsync(tmp.fd) != 0) fail("fsync", tmp.tmp_path);
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) fail("close", tmp.tmp_path);
  if (::rename(tmp.tmp_path.c_str(), path.c_str()) != 0) fail("rename '" + tmp.tmp_path + "' to", path);
  tmp.committed = true;

  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) fail("open directory", dir);
  const int synced = ::fsync(dir_fd);
  const int saved_errno = errno;
  ::close(dir_fd);
  errno = saved_errno;
  if (synced != 0) fail("fsync directory", dir);
}

safetensors_file load_safetensors(const std::string& path) {
  const safetensors_view view = safetensors_view::open(path);
  safetensors_file result;
  result.metadata = view.metadata();
  for (const safetensors_entry& e : view.entries()) {
    tensor t = view.read(e);  // throws for a dtype other than F32, F16, BF16
    view.release(e);
    result.tensors.emplace(e.name, std::move(t));
  }
  return result;
}

void check_tensors(const tensor_map& got, const std::vector<tensor_spec>& expected,
                   const std::string& source) {
  std::vector<std::string> problems;
  std::set<std::string> expected_names;
  for (const tensor_spec& spec : expected) {
    expected_names.insert(spec.name);
    const auto it = got.find(spec.name);
    if (it == got.end()) {
      problems.push_back("missing tensor '" + spec.name + "'");
    } else if (it->second.shape != spec.shape) {
      problems.push_back("tensor '" + spec.name + "' has shape " + shape_string(it->second.shape) +
                         ", expected " + shape_string(spec.shape));
    } else {
      std::int64_t n = 0;
      if (!checked_numel(spec.shape, &n) || static_cast<std::uint64_t>(n) != it->second.data.size())
        problems.push_back("tensor '" + spec.name + "' holds " + std::to_string(it->second.data.size()) +
                           " values, but its shape " + shape_string(spec.shape) + " needs " +
                           std::to_string(n));
    }
  }
  for (const auto& [name, t] : got)
    if (expected_names.count(name) == 0) problems.push_back("unexpected tensor '" + name + "'");
  if (problems.empty()) return;

  std::string message = source + ": " + std::to_string(problems.size()) +
                        (problems.size() == 1 ? " tensor problem:" : " tensor problems:");
  for (const std::string& p : problems) message += "\n  " + p;
  throw safetensors_error(message);
}

}  // namespace anchorage
