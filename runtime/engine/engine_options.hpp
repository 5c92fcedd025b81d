#pragma once
#include <optional>
#include <string>

#include "kernels/device.hpp"
#include "runtime/engine/model_config.hpp"

namespace anchorage {

// What a binary needs to build the engine, from the seed's flags:
//   --preset NAME --weights FILE --weights-seed N --prefix-chunk N --ctx-size N --device cpu|cuda|auto
struct engine_options {
  std::string preset = "small";
  std::optional<std::string> weights_path;  // safetensors; random weights when absent
  std::uint64_t weights_seed = 1;
  std::optional<int> prefix_chunk;
  std::optional<int> ctx_size;
  std::string device = "cpu";

  // Consumes `flag value` if it is one of the above; throws std::invalid_argument for a bad value.
  bool parse(const std::string& flag, const std::string& value);
  model_config config() const;       // validated
  kernels::backend backend() const;  // auto: cuda when available
};

}  // namespace anchorage
