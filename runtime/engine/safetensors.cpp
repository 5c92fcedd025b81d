// Reading and writing safetensors files; see safetensors.hpp for the format and contracts.
#include "runtime/engine/safetensors.hpp"

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
                         const std::map<std::string, std::string>& metadata) {
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
    const std::uint64_t bytes = static_cast<std::uint64_t>(n) * 4;
    header[name] =
        json{{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", json::array({offset, offset + bytes})}};
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

// --- reading ---------------------------------------------------------------------------------

// Reads exactly n bytes at `offset` or returns false with errno set (0 on a short file).
bool pread_all(int fd, void* buf, std::size_t n, std::uint64_t offset) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (r == 0) {
      errno = 0;
      return false;
    }
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
  return true;
}

float float_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// IEEE binary16 -> binary32, exact for every input (subnormals normalised, inf/NaN kept).
float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return float_from_bits(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return float_from_bits(sign);
    // Subnormal: mant * 2^-24. Shift until the implicit bit (0x400) is set.
    std::uint32_t shift = 0;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      ++shift;
    }
    return float_from_bits(sign | ((113u - shift) << 23) | ((mant & 0x3ffu) << 13));
  }
  return float_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

// bfloat16 is the top half of a binary32.
float bf16_to_float(std::uint16_t h) { return float_from_bits(static_cast<std::uint32_t>(h) << 16); }

std::int64_t element_size(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

void decode(const std::string& dtype, const unsigned char* in, std::size_t count, float* out) {
  if (dtype == "F32") {
    for (std::size_t i = 0; i < count; ++i, in += 4)
      out[i] = float_from_bits(std::uint32_t(in[0]) | std::uint32_t(in[1]) << 8 | std::uint32_t(in[2]) << 16 |
                               std::uint32_t(in[3]) << 24);
  } else {
    const bool half = dtype == "F16";
    for (std::size_t i = 0; i < count; ++i, in += 2) {
      const auto h = static_cast<std::uint16_t>(in[0] | in[1] << 8);
      out[i] = half ? f16_to_float(h) : bf16_to_float(h);
    }
  }
}

// A non-negative JSON integer as uint64, or false.
bool as_u64(const json& v, std::uint64_t* out) {
  if (!v.is_number_unsigned()) return false;
  *out = v.get<std::uint64_t>();
  return true;
}

struct file_closer {
  int fd;
  ~file_closer() { ::close(fd); }
};

}  // namespace

void save_safetensors(const std::string& path, const tensor_map& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string header = build_header(path, tensors, metadata);
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

  constexpr std::size_t chunk_floats = 1 << 18;  // 1 MiB of output per write
  std::vector<unsigned char> buf;
  for (const auto& [name, t] : tensors) {
    for (std::size_t i = 0; i < t.data.size(); i += chunk_floats) {
      const std::size_t n = std::min(chunk_floats, t.data.size() - i);
      buf.resize(n * 4);
      for (std::size_t j = 0; j < n; ++j) {
        std::uint32_t bits;
        std::memcpy(&bits, &t.data[i + j], 4);
        put_u32_le(&buf[j * 4], bits);
      }
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
  const std::string where = "safetensors file '" + path + "'";
  auto fail = [&](const std::string& what) { throw safetensors_error(where + ": " + what); };

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open: " + errno_text());
  file_closer closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("cannot stat: " + errno_text());
  if (!S_ISREG(st.st_mode)) fail("not a regular file");
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  auto read_error = [&](const std::string& what) {
    fail("cannot read " + what + ": " + (errno != 0 ? errno_text() : "file shrank while reading"));
  };

  if (file_size < 8)
    fail("file is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  unsigned char length_bytes[8];
  if (!pread_all(fd, length_bytes, 8, 0)) read_error("header length");
  std::uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= std::uint64_t(length_bytes[i]) << (8 * i);
  if (header_len > file_size - 8)
    fail("header length " + std::to_string(header_len) + " goes beyond the end of the file (" +
         std::to_string(file_size) + " bytes)");

  std::string header_text(header_len, '\0');
  if (!pread_all(fd, header_text.data(), header_len, 8)) read_error("header");
  json header;
  try {
    header = json::parse(header_text);
  } catch (const json::parse_error& e) {
    fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail("header is not a JSON object");

  const std::uint64_t data_start = 8 + header_len;
  const std::uint64_t data_size = file_size - data_start;
  safetensors_file result;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("__metadata__ is not a JSON object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail("__metadata__ value for '" + key + "' is not a string");
        result.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string tensor_where = "tensor '" + name + "': ";
    auto bad = [&](const std::string& what) { fail(tensor_where + what); };
    if (!entry.is_object()) bad("entry is not a JSON object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(key)) bad(std::string("missing '") + key + "'");

    const json& dtype_json = entry["dtype"];
    if (!dtype_json.is_string()) bad("'dtype' is not a string");
    const std::string dtype = dtype_json.get<std::string>();
    const std::int64_t elem = element_size(dtype);
    if (elem == 0) bad("unsupported dtype '" + dtype + "' (supported: F32, F16, BF16)");

    const json& shape_json = entry["shape"];
    if (!shape_json.is_array()) bad("'shape' is not a list");
    tensor t;
    for (const json& d : shape_json) {
      if (!d.is_number_integer()) bad("'shape' holds a non-integer " + d.dump());
      if (!d.is_number_unsigned()) bad("negative dimension " + d.dump() + " in 'shape'");
      const std::uint64_t u = d.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        bad("dimension " + d.dump() + " is too large");
      t.shape.push_back(static_cast<std::int64_t>(u));
    }
    std::int64_t numel = 0;
    if (!checked_numel(t.shape, &numel) || numel > std::numeric_limits<std::int64_t>::max() / elem)
      bad("shape " + shape_string(t.shape) + " is too large");

    const json& offsets = entry["data_offsets"];
    std::uint64_t begin = 0, end = 0;
    if (!offsets.is_array() || offsets.size() != 2 || !as_u64(offsets[0], &begin) ||
        !as_u64(offsets[1], &end))
      bad("'data_offsets' is not a pair of non-negative integers: " + offsets.dump());
    const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
    if (end < begin) bad("data_offsets " + range + " end before they begin");
    if (end > data_size)
      bad("data_offsets " + range + " go beyond the data buffer (" + std::to_string(data_size) + " bytes)");
    const std::uint64_t need = static_cast<std::uint64_t>(numel * elem);
    if (end - begin != need)
      bad("data_offsets " + range + " span " + std::to_string(end - begin) + " bytes, but shape " +
          shape_string(t.shape) + " of dtype " + dtype + " needs " + std::to_string(need));

    std::vector<unsigned char> bytes(need);
    if (need > 0 && !pread_all(fd, bytes.data(), need, data_start + begin))
      read_error("data of tensor '" + name + "'");
    t.data.resize(static_cast<std::size_t>(numel));
    decode(dtype, bytes.data(), t.data.size(), t.data.data());
    result.tensors.emplace(name, std::move(t));
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
