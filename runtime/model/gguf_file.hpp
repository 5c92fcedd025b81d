#pragma once
// The GGUF file format, version 3 (ggml's gguf.h, gguf-py's GGUFReader/GGUFWriter), little-endian:
//   4 bytes   magic "GGUF"
//   uint32    version (3; 2 is read too, it has the same layout)
//   uint64    tensor count, uint64 metadata count
//   metadata  count x { string key, uint32 value type, value }
//             string = uint64 byte length + bytes (no terminator);
//             array  = uint32 element type, uint64 count, the elements
//   infos     tensor count x { string name, uint32 n_dims, n_dims x uint64 ne (ne[0] varies fastest,
//             the reverse of a PyTorch shape), uint32 ggml type, uint64 offset into the data section }
//   padding   zeros up to a multiple of the alignment (`general.alignment`, uint32, default 32)
//   data      each tensor at its offset (a multiple of the alignment), row-major with ne[0] innermost
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/tensor.hpp"

namespace anchorage {

// Metadata value types (enum gguf_type).
enum class gguf_type : std::uint32_t {
  uint8 = 0,
  int8 = 1,
  uint16 = 2,
  int16 = 3,
  uint32 = 4,
  int32 = 5,
  float32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  uint64 = 10,
  int64 = 11,
  float64 = 12,
};
const char* to_string(gguf_type t);

// The tensor element types (enum ggml_type) Anchorage reads and writes: the float types and the
// block types of kernels/weight_type.hpp (layouts in ../shared/reference/model-formats.md section
// 1). Any other number in a file (Q4_1, Q5_0, the IQ types, ...) is named in errors.
enum class ggml_type : std::uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q8_0 = 8,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  bf16 = 30
};
// "F32", "F16", "BF16", "Q4_K", ... (gguf-py's names); "type 77" for an unknown number.
std::string ggml_type_name(std::uint32_t type);
// The name llama.cpp prints (ggml_type_name in ggml.c): "f32", "bf16", "q4_1", "q4_K", "iq2_xxs";
// "type 77" for an unknown number.
std::string ggml_type_llama_name(std::uint32_t type);

// One metadata value. Integers and booleans are held in `i`, floats in `f`; an array holds its
// elements in `ints`, `floats` or `strings` according to `elem` (nested arrays are not supported).
struct gguf_value {
  gguf_type type = gguf_type::uint32;
  gguf_type elem = gguf_type::uint32;  // the element type, for arrays
  std::int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::vector<std::int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;

  static gguf_value u32(std::uint32_t v);
  static gguf_value i32(std::int32_t v);
  static gguf_value f32(float v);
  static gguf_value boolean(bool v);
  static gguf_value str(std::string v);
  static gguf_value int_array(gguf_type elem, std::vector<std::int64_t> v);
  static gguf_value bool_array(const std::vector<bool>& v);
  static gguf_value str_array(std::vector<std::string> v);

  bool is_integer() const;  // any integer or boolean scalar
  bool is_float() const;    // float32 or float64
};

struct gguf_tensor_info {
  std::string name;
  std::vector<std::int64_t> ne;  // ggml order: ne[0] is the innermost dimension
  std::uint32_t type = 0;        // ggml_type number
  std::uint64_t offset = 0;      // bytes from the start of the data section
  std::vector<std::int64_t> shape() const { return {ne.rbegin(), ne.rend()}; }  // PyTorch order
};

// A GGUF file mapped read-only. The constructor parses the header, metadata and tensor infos and
// checks that every tensor's bytes lie inside the file; it throws model_load_error naming the file
// (and the key or tensor) on a bad magic or version, a truncated file, an unknown value type, a
// tensor outside the data section, or an alignment that is not a positive power of two.
//
// A tensor of a type Anchorage reads (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) whose ne0 fills
// the type's blocks has its extent checked there: row_bytes(type, ne0) * rows must fit between its
// offset and the end of the file ("truncated GGUF file (tensor 'x' of type Q8_0, ne [64, 16]: 16
// rows of 68 bytes = 1088 bytes, but 1087 bytes remain after its offset)") and must not run into
// the next tensor's offset ("tensor 'x' of type Q8_0 ... runs into tensor 'y'"). A tensor of
// another type, or whose ne0 does not fill its blocks, is checked for its start only: the file
// still opens (its metadata can be read) and check_readable/read refuse that tensor by name.
// Not copyable; reads are const and thread-safe.
class gguf_reader {
 public:
  explicit gguf_reader(const std::string& path);
  ~gguf_reader();
  gguf_reader(const gguf_reader&) = delete;
  gguf_reader& operator=(const gguf_reader&) = delete;

  const std::string& path() const { return path_; }
  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  const std::map<std::string, gguf_value>& metadata() const { return kv_; }
  const std::vector<gguf_tensor_info>& tensors() const { return infos_; }

  const gguf_value* find(const std::string& key) const;  // null when absent
  const gguf_tensor_info* find_tensor(const std::string& name) const;

  // Throws model_load_error naming the file and the tensor when read() would refuse it, reading
  // nothing: a type Anchorage does not read ("tensor 'x' has type Q4_1 (llama.cpp's q4_1, ggml
  // type 3), which Anchorage does not read (...)"), or an ne0 that does not fill the type's blocks
  // ("tensor 'x' has type Q4_K (llama.cpp's q4_K) with ne0 64, not a multiple of its 256-value
  // blocks"). A loader calls it for every tensor it needs before reading any.
  void check_readable(const gguf_tensor_info& info) const;

  // The tensor as float32 with its PyTorch shape (ne reversed), each row converted with
  // kernels::dequantize_row (exact for F16/BF16; the block types give the bits llama.cpp's
  // dequantize_row_* gives). Throws model_load_error naming the tensor for an absent name or
  // whatever check_readable refuses. --weight-storage f32 and the cuda backend take this path; the
  // engine's matrices otherwise stay in their stored type (bytes()).
  tensor read(const std::string& name) const;
  // The tensor's bytes as the file stores them, inside the reader's mapping (valid while the
  // reader lives): row_bytes(type, ne0) * rows bytes. Throws as read() does.
  const unsigned char* bytes(const gguf_tensor_info& info) const;

 private:
  std::string path_;
  const unsigned char* base_ = nullptr;
  std::size_t size_ = 0;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_start_ = 0;
  std::map<std::string, gguf_value> kv_;
  std::vector<gguf_tensor_info> infos_;
  std::map<std::string, std::size_t> by_name_;
};

// A tensor to write: float32 values with a PyTorch shape, stored as `type` (any ggml_type above;
// rows along the last PyTorch dimension, ne0, each converted with kernels::quantize_row).
struct gguf_tensor_out {
  std::string name;
  const tensor* value = nullptr;
  ggml_type type = ggml_type::f32;
};

// Writes a version-3 GGUF file: the metadata in the order given, then the tensor infos and the
// data, each tensor aligned to `general.alignment` when that key is given (uint32), else 32.
// F16 and BF16 round to nearest even; the block types are kernels::quantize_row's (q8_0/q4_0 byte
// for byte llama.cpp's reference quantizers, the K types a plainer round-to-nearest). Crash-safe:
// writes path + ".tmp", fsyncs, renames it over `path`. Throws std::invalid_argument (nothing
// written) for a duplicate key or tensor name, a tensor whose data does not match its shape, a
// type number outside ggml_type, or a block type whose blocks the tensor's ne0 does not fill;
// std::runtime_error naming the path and strerror on an I/O failure.
void save_gguf(const std::string& path, const std::vector<std::pair<std::string, gguf_value>>& metadata,
               const std::vector<gguf_tensor_out>& tensors);

}  // namespace anchorage
