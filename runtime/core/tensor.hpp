#pragma once
// A host tensor: float32 values, row-major, with an explicit shape.
//
// Contract: data.size() == numel() for a well-formed tensor. The struct does not enforce it;
// code that writes or checks tensors (save_safetensors, check_tensors) does.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace anchorage {

struct tensor {
  std::vector<std::int64_t> shape;  // empty shape = scalar (one element)
  std::vector<float> data;          // row-major, numel() values

  // Product of the dimensions; 1 for a scalar, 0 when any dimension is 0.
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    return n;
  }
};

// Tensors by name; iteration is in name order.
using tensor_map = std::map<std::string, tensor>;

// "[64, 128]" for {64, 128}; "[]" for a scalar.
inline std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  s += "]";
  return s;
}

}  // namespace anchorage
