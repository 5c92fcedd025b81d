#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/model/model_config.hpp"
#include "runtime/model/stored_weight.hpp"
#include "runtime/model/safetensors.hpp"
#include "runtime/core/tensor.hpp"

namespace anchorage {

// Every tensor the model reads, with its shape (Linear weights are [out, in]).
std::vector<tensor_spec> weight_specs(const model_config& c);

// Deterministic random weights: each tensor from its own stream keyed by (seed, name), so a
// tensor does not change when another is added. Norm weights start at 1.
tensor_map random_weights(const model_config& c, std::uint64_t seed);

// Loads a safetensors file and checks it against weight_specs(c); a missing or mis-shaped
// tensor is a safetensors_error naming it.
tensor_map load_weights(const std::string& path, const model_config& c);
void save_weights(const std::string& path, const tensor_map& w, const model_config& c);

// XXH3-64 over names, shapes and bytes in name order, and each weight's stored type where
// `stored_types` names one (loaded_model::stored_types; none: the digest of the values alone),
// then over the weights kept as stored (`stored`: name, shape, type, the file's bytes and the
// value-head order), if any: the weights' part of the fingerprint. Equal values stored in two
// types digest apart, and so do a file's weights kept as stored and the same weights converted to
// float32 (--weight-storage f32), which the engine multiplies with other kernels.
std::uint64_t weights_digest(const tensor_map& w, const std::map<std::string, std::string>& stored_types = {},
                             const stored_weights& stored = {});

}  // namespace anchorage
