#pragma once
// The safetensors file format (https://github.com/huggingface/safetensors):
//   8 bytes   little-endian uint64 N, the header length
//   N bytes   JSON object: name -> {"dtype": str, "shape": [int...], "data_offsets": [begin, end]}
//             with offsets in bytes relative to the start of the data buffer, plus an optional
//             "__metadata__": {str: str}
//   rest      the data buffer, little-endian values
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/core/tensor.hpp"

namespace anchorage {

// A file that is unreadable, malformed, or holds the wrong tensors. The message names the file
// (or the source given to check_tensors) and the offending tensor.
struct safetensors_error : std::runtime_error {
  explicit safetensors_error(const std::string& message) : std::runtime_error(message) {}
};

// The dtypes save_safetensors writes.
enum class safetensors_dtype { f32, f16, bf16 };
const char* to_string(safetensors_dtype d);  // "F32", "F16", "BF16"

struct safetensors_write_options {
  safetensors_dtype dtype = safetensors_dtype::f32;     // every tensor not in per_tensor
  std::map<std::string, safetensors_dtype> per_tensor;  // by tensor name
  safetensors_dtype dtype_of(const std::string& name) const;
};

// Writes `tensors` (as dtype "F32" unless `options` says otherwise; F16 and BF16 values are
// rounded to nearest, ties to even) in name order with contiguous data offsets, the header padded
// with spaces to a multiple of 8 bytes; "__metadata__" is written only when `metadata` is not
// empty. Crash-safe: writes path + ".tmp", fsyncs it, renames it over `path`, fsyncs the
// directory; on failure the tmp file is removed and `path` is left as it was.
// Throws std::invalid_argument (nothing written) if a tensor has a negative dimension, data.size()
// != numel(), or is named "__metadata__"; std::runtime_error naming the path and strerror on any
// I/O failure.
void save_safetensors(const std::string& path, const tensor_map& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      const safetensors_write_options& options = {});

struct safetensors_file {
  tensor_map tensors;
  std::map<std::string, std::string> metadata;  // empty when the file has no "__metadata__"
};

// Reads a whole file through a memory mapping (safetensors_view), tensor by tensor. Dtypes F32, F16 and BF16
// are accepted; F16 and BF16 are converted to float exactly (every half value is a float value; NaN payloads
// are kept). Throws safetensors_error when the file cannot be read or is malformed in any way this reader
// checks: too short, header length beyond the file, header not a JSON object, an entry missing or mistyping
// dtype/shape/data_offsets, unsupported dtype, negative dimension, offsets out of the data buffer
// or end < begin, byte length != numel * element size, malformed "__metadata__".
// Overlapping tensors and unused bytes in the data buffer are not detected.
safetensors_file load_safetensors(const std::string& path);

struct tensor_spec {
  std::string name;
  std::vector<std::int64_t> shape;
};

// Checks that `got` holds exactly the tensors in `expected`, each with the expected shape (and
// data.size() matching that shape). Otherwise throws safetensors_error whose message starts with
// `source` and lists every problem, one per line: "missing tensor 'n'",
// "tensor 'n' has shape [3, 4], expected [4, 4]", "unexpected tensor 'n'". Problems with expected
// tensors come in `expected` order, then unexpected tensors in name order.
void check_tensors(const tensor_map& got, const std::vector<tensor_spec>& expected,
                   const std::string& source);

}  // namespace anchorage
