#include "runtime/engine/engine_weights.hpp"

#include <stdexcept>

#include "runtime/engine/engine_tensors.hpp"
#include "runtime/engine/model_weights.hpp"
#include "runtime/engine/safetensors.hpp"

namespace anchorage {

engine_weights::engine_weights(const model_config& c, const tensor_map& w, kernels::backend b,
                               const std::map<std::string, std::string>& stored_types)
    : cfg_(c), where_(b) {
  cfg_.validate();
  if (b == kernels::backend::cuda && !kernels::cuda_available())
    throw std::invalid_argument("the cuda backend was asked for but no CUDA device is present");
  check_tensors(w, weight_specs(cfg_), "engine weights");

  const auto tensors = engine_tensors(cfg_, w);
  std::size_t total = 0;
  for (const auto& t : tensors) total += t.numel;
  buf_ = device_buffer(b, total);
  float* at = buf_.data();
  for (const auto& t : tensors) {
    if (!t.alias_of.empty()) continue;
    t.fill(at);
    ptr_[t.name] = at;
    at += t.numel;
  }
  for (const auto& t : tensors)
    if (!t.alias_of.empty()) ptr_[t.name] = ptr_.at(t.alias_of);
  digest_ = weights_digest(w, stored_types);
}

}  // namespace anchorage
