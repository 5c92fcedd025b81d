#pragma once
#include <optional>
#include <string>

#include "kernels/device.hpp"
#include "runtime/model/loaded_model.hpp"
#include "runtime/model/model_config.hpp"

namespace anchorage {

// What a binary needs to build the engine, from the seed's flags:
//   --model PATH --preset NAME --weights FILE --weights-seed N --prefix-chunk N --ctx-size N
//   --device cpu|cuda|auto --weight-storage stored|f32 --threads N --activations auto|q8|f32
//   --vision-preset none|tiny|small --mmproj FILE
struct engine_options {
  // A checkpoint (a Hugging Face directory or a GGUF file, runtime/model/model_load); the
  // preset and its weights otherwise.
  std::optional<std::string> model_path;
  std::string preset = "small";
  std::optional<std::string> weights_path;  // safetensors; random weights when absent
  std::uint64_t weights_seed = 1;
  std::optional<int> prefix_chunk;
  std::optional<int> ctx_size;
  std::string device = "cpu";
  // --weight-storage: "stored" keeps a checkpoint's BF16, F16 and quantized matrices as the file
  // stores them (mapped, multiplied in their type); "f32" converts every weight to float32 at load
  // (more memory, the BLAS products).
  std::string weight_storage = "stored";
  // --threads: the cores the products use (runtime/engine/compute_threads.hpp); all when unset.
  std::optional<int> threads;
  // --activations: how products by Q8_0, Q4_0, Q4_K, Q5_K and Q6_K matrices take their activations
  // (runtime/engine/compute_threads.hpp): "q8" rounds them to 8 bits and multiplies integers,
  // "f32" keeps them (the default); "auto" is q8 where the CPU has AVX-512 VNNI.
  std::string activations = "f32";
  // --vision-preset: a random vision tower (runtime/vision: "tiny" or "small") beside a preset's
  // or a checkpoint's language model that has none, for tests and benchmarks; "none" (the
  // default) serves the checkpoint's own tower, if it has one.
  std::string vision_preset = "none";
  // --mmproj: llama.cpp's vision file (runtime/model/mmproj_gguf.hpp) beside a GGUF --model
  // whose file holds the text model alone.
  std::optional<std::string> mmproj_path;

  // Consumes `flag value` if it is one of the above; throws std::invalid_argument for a bad value.
  bool parse(const std::string& flag, const std::string& value);
  // The preset's config, validated (the checkpoint's once loaded: see load()).
  model_config config() const;
  // The model to serve: the checkpoint read from model_path (model_load_error when it cannot be),
  // or the preset with its weights file or random weights; --prefix-chunk and --ctx-size
  // applied, the config validated; --threads applied to the process (set_compute_threads).
  loaded_model load() const;
  kernels::backend backend() const;  // auto: cuda when available
};

}  // namespace anchorage
