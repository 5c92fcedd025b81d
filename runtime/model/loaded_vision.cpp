// The vision tower's digest; see loaded_vision.hpp.
#include "runtime/model/loaded_vision.hpp"

#include <xxhash.h>

namespace anchorage {

std::uint64_t vision_digest(const loaded_vision& v) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, "vision", 7);
  for (const auto& [name, t] : v.weights) {
    XXH3_64bits_update(st, name.data(), name.size() + 1);
    const std::uint64_t rank = t.shape.size();
    XXH3_64bits_update(st, &rank, sizeof rank);
    XXH3_64bits_update(st, t.shape.data(), t.shape.size() * sizeof(std::int64_t));
    XXH3_64bits_update(st, t.data.data(), t.data.size() * sizeof(float));
  }
  const std::string config = v.config.dump();  // object keys in sorted order: stable
  XXH3_64bits_update(st, config.data(), config.size() + 1);
  XXH3_64bits_update(st, v.processor_config.data(), v.processor_config.size() + 1);
  const std::uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace anchorage
