// Parsing a mapped safetensors header and converting its tensors; see safetensors_view.hpp.
#include "runtime/model/safetensors_view.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/model/half_float.hpp"

namespace anchorage {
namespace {

using json = nlohmann::json;

// Bytes per element of the safetensors dtypes; 0 for a string the format does not define.
std::int64_t element_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "BOOL" || dtype == "U8" || dtype == "I8" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

// Product of `shape` into *out; false if the product overflows int64 (dimensions are >= 0).
bool checked_numel(const std::vector<std::int64_t>& shape, std::int64_t* out) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) return false;
    n *= d;
  }
  *out = n;
  return true;
}

bool as_u64(const json& v, std::uint64_t* out) {
  if (!v.is_number_unsigned()) return false;
  *out = v.get<std::uint64_t>();
  return true;
}

std::uint16_t le16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }

void decode(const std::string& dtype, const unsigned char* in, std::size_t count, float* out) {
  if (dtype == "F32") {
    for (std::size_t i = 0; i < count; ++i, in += 4) {
      const std::uint32_t bits = std::uint32_t(in[0]) | std::uint32_t(in[1]) << 8 |
                                 std::uint32_t(in[2]) << 16 | std::uint32_t(in[3]) << 24;
      std::memcpy(&out[i], &bits, 4);
    }
  } else if (dtype == "F16") {
    for (std::size_t i = 0; i < count; ++i, in += 2) out[i] = f16_to_float(le16(in));
  } else {
    for (std::size_t i = 0; i < count; ++i, in += 2) out[i] = bf16_to_float(le16(in));
  }
}

}  // namespace

bool is_float_dtype(const std::string& dtype) { return dtype == "F32" || dtype == "F16" || dtype == "BF16"; }

safetensors_view safetensors_view::open(const std::string& path) {
  const std::string where = "safetensors file '" + path + "'";
  auto fail = [&](const std::string& what) { throw safetensors_error(where + ": " + what); };
  safetensors_view v;
  try {
    v.file_ = mapped_file::open(path);
  } catch (const std::runtime_error& e) {
    fail(e.what());
  }
  const std::uint64_t file_size = v.file_.size();
  const unsigned char* base = v.file_.data();
  if (file_size < 8)
    fail("file is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  std::uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= std::uint64_t(base[i]) << (8 * i);
  if (header_len > file_size - 8)
    fail("header length " + std::to_string(header_len) + " goes beyond the end of the file (" +
         std::to_string(file_size) + " bytes): the file is truncated or not safetensors");

  json header;
  try {
    header = json::parse(base + 8, base + 8 + header_len);
  } catch (const json::exception& e) {  // a parse error, or a number past double (out_of_range)
    fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail("header is not a JSON object");

  const std::uint64_t data_start = 8 + header_len;
  const std::uint64_t data_size = file_size - data_start;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("__metadata__ is not a JSON object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail("__metadata__ value for '" + key + "' is not a string");
        v.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    // Named for the lambda: a structured binding cannot be captured before C++20 (clang refuses).
    const std::string& tensor_name = name;
    auto bad = [&](const std::string& what) { fail("tensor '" + tensor_name + "': " + what); };
    if (!entry.is_object()) bad("entry is not a JSON object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(key)) bad(std::string("missing '") + key + "'");
    safetensors_entry e;
    e.name = name;
    if (!entry["dtype"].is_string()) bad("'dtype' is not a string");
    e.dtype = entry["dtype"].get<std::string>();
    const std::int64_t elem = element_size(e.dtype);

    const json& shape_json = entry["shape"];
    if (!shape_json.is_array()) bad("'shape' is not a list");
    for (const json& d : shape_json) {
      if (!d.is_number_integer()) bad("'shape' holds a non-integer " + d.dump());
      if (!d.is_number_unsigned()) bad("negative dimension " + d.dump() + " in 'shape'");
      const std::uint64_t u = d.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        bad("dimension " + d.dump() + " is too large");
      e.shape.push_back(static_cast<std::int64_t>(u));
    }
    std::int64_t numel = 0;
    if (!checked_numel(e.shape, &numel) ||
        (elem > 0 && numel > std::numeric_limits<std::int64_t>::max() / elem))
      bad("shape " + shape_string(e.shape) + " is too large");

    const json& offsets = entry["data_offsets"];
    std::uint64_t begin = 0, end = 0;
    if (!offsets.is_array() || offsets.size() != 2 || !as_u64(offsets[0], &begin) ||
        !as_u64(offsets[1], &end))
      bad("'data_offsets' is not a pair of non-negative integers: " + offsets.dump());
    const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
    if (end < begin) bad("data_offsets " + range + " end before they begin");
    if (end > data_size)
      bad("data_offsets " + range + " go beyond the data buffer (" + std::to_string(data_size) +
          " bytes): the file is truncated");
    if (elem > 0) {
      const auto need = static_cast<std::uint64_t>(numel * elem);
      if (end - begin != need)
        bad("data_offsets " + range + " span " + std::to_string(end - begin) + " bytes, but shape " +
            shape_string(e.shape) + " of dtype " + e.dtype + " needs " + std::to_string(need));
    }
    e.begin = data_start + begin;
    e.end = data_start + end;
    v.by_name_.emplace(name, v.entries_.size());
    v.entries_.push_back(std::move(e));
  }
  return v;
}

const safetensors_entry* safetensors_view::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

tensor safetensors_view::read(const safetensors_entry& e) const {
  if (!is_float_dtype(e.dtype))
    throw safetensors_error("safetensors file '" + path() + "': tensor '" + e.name +
                            "': unsupported dtype '" + e.dtype + "' (supported: F32, F16, BF16)");
  tensor t;
  t.shape = e.shape;
  t.data.resize(static_cast<std::size_t>(t.numel()));
  if (!t.data.empty()) decode(e.dtype, file_.data() + e.begin, t.data.size(), t.data.data());
  return t;
}

const unsigned char* safetensors_view::bytes(const safetensors_entry& e) const {
  file_.reuse(static_cast<std::size_t>(e.begin), static_cast<std::size_t>(e.end - e.begin));
  return file_.data() + e.begin;
}

void safetensors_view::release(const safetensors_entry& e) const {
  file_.release(static_cast<std::size_t>(e.begin), static_cast<std::size_t>(e.end - e.begin));
}

}  // namespace anchorage
