#include "runtime/engine/engine_weights.hpp"

#include <xxhash.h>

#include <cstdint>
#include <stdexcept>

#include "runtime/engine/engine_tensors.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/safetensors.hpp"

namespace anchorage {
namespace {

// The specs not kept as stored, for check_tensors over `w`; each kept one checked here.
std::vector<tensor_spec> check_stored(const std::vector<tensor_spec>& specs, const stored_weights& stored) {
  std::vector<tensor_spec> rest;
  for (const tensor_spec& s : specs) {
    const auto it = stored.find(s.name);
    if (it == stored.end()) {
      rest.push_back(s);
      continue;
    }
    if (it->second.shape != s.shape)
      throw safetensors_error("engine weights: stored tensor '" + s.name + "' has shape " +
                              shape_string(it->second.shape) + ", expected " + shape_string(s.shape));
    if (!kernels::row_bytes(it->second.type, it->second.cols()) || it->second.data == nullptr)
      throw safetensors_error("engine weights: stored tensor '" + s.name + "' (" +
                              kernels::weight_type_name(it->second.type) + ") has no rows of its type");
  }
  for (const auto& [name, sw] : stored) {
    bool known = false;
    for (const tensor_spec& s : specs) known = known || s.name == name;
    if (!known) throw safetensors_error("engine weights: unexpected stored tensor '" + name + "'");
  }
  return rest;
}

tensor_map with_converted(const tensor_map& w, const stored_weights& stored) {
  tensor_map all = w;
  for (const auto& [name, sw] : stored) all.insert_or_assign(name, to_f32(sw));
  return all;
}

}  // namespace

engine_weights::engine_weights(const model_config& c, const tensor_map& w, kernels::backend b,
                               const std::map<std::string, std::string>& stored_types)
    : engine_weights(c, w, stored_weights{}, b, stored_types) {}

engine_weights::engine_weights(const model_config& c, const tensor_map& w, const stored_weights& stored,
                               kernels::backend b, const std::map<std::string, std::string>& stored_types)
    : cfg_(c), where_(b) {
  cfg_.validate();
  if (b == kernels::backend::cuda && !kernels::cuda_available())
    throw std::invalid_argument("the cuda backend was asked for but no CUDA device is present");
  if (b == kernels::backend::cuda && cfg_.is_moe())
    throw std::invalid_argument(
        "the cuda backend does not run mixture-of-experts models yet: serve this model with --device cpu");
  // The CUDA ops read float32 weights: convert there.
  const bool convert = b == kernels::backend::cuda && !stored.empty();
  const tensor_map converted = convert ? with_converted(w, stored) : tensor_map{};
  const tensor_map& floats = convert ? converted : w;
  if (!convert) stored_ = stored;
  const std::vector<tensor_spec> specs = weight_specs(cfg_);
  check_tensors(floats, check_stored(specs, stored_), "engine weights");

  const auto tensors = engine_tensors(cfg_, floats, stored_);
  std::size_t total = 0;
  for (const auto& t : tensors) total += t.numel;
  buf_ = device_buffer(b, total);
  float* at = buf_.data();
  for (const auto& t : tensors) {
    if (!t.alias_of.empty()) continue;
    if (!t.stored.empty()) {
      linear_weight& lw = linear_[t.name];
      for (const stored_rows& r : t.stored) {
        const stored_weight& sw = *r.weight;
        if (r.first < 0 || r.count < 0 || r.first + r.count > sw.rows() ||
            (r.count != sw.rows() && sw.order.along != v_head_order::axis::none))
          throw std::logic_error("engine weights: a bad slice of '" + t.name + "'");
        const auto row = static_cast<std::size_t>(kernels::row_bytes(sw.type, sw.cols()).value_or(0));
        lw.parts.push_back({sw.type, sw.data + row * static_cast<std::size_t>(r.first),
                            static_cast<int>(r.count), sw.order});
        stored_bytes_ += row * static_cast<std::size_t>(r.count);
      }
      // A float32 matrix in the file's order is a float32 weight like a converted one, read where
      // the file's mapping holds it: the same products, bit for bit, without the copy.
      // (A file whose alignment leaves the floats unaligned keeps the row kernels, which copy.)
      if (lw.parts.size() == 1 && lw.parts[0].type == kernels::weight_type::f32 &&
          lw.parts[0].order.along == v_head_order::axis::none &&
          reinterpret_cast<std::uintptr_t>(lw.parts[0].data) % alignof(float) == 0) {
        const float* f = reinterpret_cast<const float*>(lw.parts[0].data);
        lw = linear_weight{};
        lw.f32 = f;
        ptr_[t.name] = f;
      }
      continue;
    }
    t.fill(at);
    ptr_[t.name] = at;
    linear_[t.name].f32 = at;
    at += t.numel;
  }
  for (const auto& t : tensors)
    if (!t.alias_of.empty()) {
      if (const auto it = ptr_.find(t.alias_of); it != ptr_.end()) ptr_[t.name] = it->second;
      linear_[t.name] = linear_.at(t.alias_of);
    }
  digest_ = weights_digest(floats, stored_types, stored_);
}

void engine_weights::add_vision(std::uint64_t vision_digest) {
  const std::uint64_t both[2] = {digest_, vision_digest};
  digest_ = XXH3_64bits(both, sizeof both);
}

}  // namespace anchorage
