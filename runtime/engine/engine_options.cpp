#include "runtime/engine/engine_options.hpp"

#include <stdexcept>

#include "runtime/engine/compute_threads.hpp"
#include "runtime/model/mmproj_gguf.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/model/model_weights.hpp"

namespace anchorage {
namespace {

long long parse_int(const std::string& flag, const std::string& v, long long lo) {
  std::size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || x < lo)
    throw std::invalid_argument(flag + " wants an integer >= " + std::to_string(lo) + ", got '" + v + "'");
  return x;
}

}  // namespace

bool engine_options::parse(const std::string& flag, const std::string& v) {
  if (flag == "--model")
    model_path = v;
  else if (flag == "--preset")
    preset = v;
  else if (flag == "--weights")
    weights_path = v;
  else if (flag == "--weights-seed")
    weights_seed = static_cast<std::uint64_t>(parse_int(flag, v, 0));
  else if (flag == "--prefix-chunk")
    prefix_chunk = static_cast<int>(parse_int(flag, v, 1));
  else if (flag == "--ctx-size")
    ctx_size = static_cast<int>(parse_int(flag, v, 1));
  else if (flag == "--device") {
    if (v != "cpu" && v != "cuda" && v != "auto")
      throw std::invalid_argument("--device is cpu, cuda or auto, got '" + v + "'");
    device = v;
  } else if (flag == "--weight-storage") {
    if (v != "stored" && v != "f32")
      throw std::invalid_argument("--weight-storage is stored or f32, got '" + v + "'");
    weight_storage = v;
  } else if (flag == "--threads") {
    threads = static_cast<int>(parse_int(flag, v, 1));
  } else if (flag == "--mmproj") {
    if (v.empty()) throw std::invalid_argument("--mmproj wants a file");
    mmproj_path = v;
  } else if (flag == "--vision-preset") {
    if (v != "none" && v != "tiny" && v != "small")
      throw std::invalid_argument("--vision-preset is none, tiny or small, got '" + v + "'");
    vision_preset = v;
  } else if (flag == "--activations") {
    if (!product_activations_named(v))
      throw std::invalid_argument("--activations is auto, q8 or f32, got '" + v + "'");
    activations = v;
  } else {
    return false;
  }
  return true;
}

model_config engine_options::config() const {
  model_config c = preset_config(preset);
  if (prefix_chunk) c.grid = *prefix_chunk;
  if (ctx_size) c.ctx_size = *ctx_size;
  c.validate();
  return c;
}

loaded_model engine_options::load() const {
  if (threads) set_compute_threads(*threads);
  set_product_activations(product_activations_named(activations).value_or(product_activations::f32));
  if (mmproj_path && !model_path) throw std::invalid_argument("--mmproj goes with a --model checkpoint");
  if (!model_path) {
    loaded_model m;
    m.config = config();
    m.weights = weights_path ? load_weights(*weights_path, m.config) : random_weights(m.config, weights_seed);
    m.source = weights_path ? *weights_path : "preset " + preset;
    return m;
  }
  loaded_model m = load_model(*model_path);
  if (mmproj_path) m.vision = load_mmproj(*mmproj_path);
  if (weight_storage == "f32") convert_stored_to_f32(m);
  if (prefix_chunk) m.config.grid = *prefix_chunk;
  if (ctx_size) m.config.ctx_size = *ctx_size;
  m.config.validate();
  return m;
}

kernels::backend engine_options::backend() const {
  if (device == "cuda") {
    if (!kernels::cuda_available()) throw std::invalid_argument("--device cuda: no CUDA device is present");
    return kernels::backend::cuda;
  }
  if (device == "auto" && kernels::cuda_available()) return kernels::backend::cuda;
  return kernels::backend::cpu;
}

}  // namespace anchorage
