#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/device.hpp"
#include "runtime/core/tensor.hpp"
#include "runtime/engine/device_buffer.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/stored_weight.hpp"

namespace anchorage {

// A matrix the engine multiplies by (y = x W^T, W [rows x cols] in PyTorch's Linear layout):
// float32 rows that the BLAS path reads (`f32`), or the rows of weights kept as stored, one part
// after another (mlp.gate_up: the gate's rows, then the up's), each in its own type and, for a
// GGUF's Gated DeltaNet tensors, its value-head order (runtime/engine/engine_linear.hpp).
struct linear_weight {
  struct part {
    kernels::weight_type type;
    const unsigned char* data;
    int rows;
    v_head_order order;
  };
  const float* f32 = nullptr;
  std::vector<part> parts;
};

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
  // With weights kept as stored (loaded_model::stored; each name of weight_specs(config) in
  // exactly one of `w` and `stored`): on the cpu backend they are multiplied as stored (a copy of
  // the map is kept, and with it the file's mapping); on cuda they are converted to float32 here,
  // and digest() is that of the converted weights.
  engine_weights(const model_config& config, const tensor_map& w, const stored_weights& stored,
                 kernels::backend where, const std::map<std::string, std::string>& stored_types);
  engine_weights(const engine_weights&) = delete;
  engine_weights& operator=(const engine_weights&) = delete;

  // Folds the model's vision tower (the digest of its weights) into digest(): an image row's
  // state comes from the tower's output, so caches written under one tower are never read
  // under another. A text model (no call) keeps the digest of its own weights alone. Call
  // before any engine is built on these weights.
  void add_vision(std::uint64_t vision_digest);

  // The config the engines built on these weights use (grid and ctx_size included).
  const model_config& config() const { return cfg_; }
  kernels::backend where() const { return where_; }

  // The float32 tensor under the engine's name ("layers.3.attn_norm"); std::out_of_range for
  // another name or for a matrix kept as stored.
  const float* get(const std::string& name) const { return ptr_.at(name); }
  // The matrix under the engine's name ("layers.3.attn.q"), float32 or kept as stored;
  // std::out_of_range for another name.
  const linear_weight& linear(const std::string& name) const { return linear_.at(name); }
  // weights_digest() of the tensors it was built from: the weights' part of the fingerprint.
  std::uint64_t digest() const { return digest_; }
  // Bytes of converted weights held (an alias such as tied embeddings counts once).
  std::size_t bytes() const { return buf_.bytes(); }
  // Bytes of weights kept as stored (in the file's mapping).
  std::size_t stored_bytes() const { return stored_bytes_; }

 private:
  model_config cfg_;
  kernels::backend where_;
  device_buffer buf_;
  std::map<std::string, const float*> ptr_;
  std::map<std::string, linear_weight> linear_;
  stored_weights stored_;  // keeps the mappings the linear weights point into
  std::size_t stored_bytes_ = 0;
  std::uint64_t digest_ = 0;
};

}  // namespace anchorage
