#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "kernels/device.hpp"
#include "runtime/core/tensor.hpp"
#include "runtime/engine/device_buffer.hpp"
#include "runtime/engine/model_config.hpp"

namespace anchorage {

// The weights an engine reads, converted once from the model's tensors (engine_tensors.hpp) into
// memory of one backend, under the engine's own names. Engines of one model share one of these
// through a std::shared_ptr<const engine_weights>: N slots cost one copy of the weights, and
// decode_batch (engine_batch.hpp) reads them once per step for every slot.
//
// Immutable after construction, so any number of engines (on any threads) may read it.
class engine_weights {
 public:
  // Validates `config`, checks `w` against weight_specs(config) and converts it. Throws
  // std::invalid_argument for an invalid config or a cuda backend without a CUDA device, and
  // safetensors_error for a missing or mis-shaped tensor. `w` is not kept. `stored_types`: the
  // types the file stored the weights in (loaded_model::stored_types), part of digest().
  engine_weights(const model_config& config, const tensor_map& w,
                 kernels::backend where = kernels::backend::cpu,
                 const std::map<std::string, std::string>& stored_types = {});
  engine_weights(const engine_weights&) = delete;
  engine_weights& operator=(const engine_weights&) = delete;

  // The config the engines built on these weights use (grid and ctx_size included).
  const model_config& config() const { return cfg_; }
  kernels::backend where() const { return where_; }

  // The tensor under the engine's name ("layers.3.attn.q"); std::out_of_range for another.
  const float* get(const std::string& name) const { return ptr_.at(name); }
  // weights_digest() of the tensors it was built from: the weights' part of the fingerprint.
  std::uint64_t digest() const { return digest_; }
  // Bytes of converted weights held (an alias such as tied embeddings counts once).
  std::size_t bytes() const { return buf_.bytes(); }

 private:
  model_config cfg_;
  kernels::backend where_;
  device_buffer buf_;
  std::map<std::string, const float*> ptr_;
  std::uint64_t digest_ = 0;
};

}  // namespace anchorage
