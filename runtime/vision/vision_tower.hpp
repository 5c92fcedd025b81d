#pragma once
// A model's vision tower as the board uses it (docs/IMAGES.md, "The vision cache"): the
// encoder's weights and the cache of its output by image digest, so a conversation that sends its
// image every turn encodes it once (--image-cache-mb, 512). Least recently used entries go first
// when the budget is passed; an image larger than the whole budget is encoded and not kept.
// The encoder runs where the tower was built to run it: on the CPU (encode_image) or on the CUDA
// device (cuda_vision_encoder, its weights uploaded once by the constructor); the cache is the
// same either way. On the CPU the board has the encoding done off its thread: plan_encode() names
// the images to encode, the vision encoder actor runs them (runtime/vision/vision_encode.hpp), and
// take_encoded() keeps what came back. Not thread-safe: the board's thread owns it.
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/device.hpp"
#include "protocol/cache_stats.hpp"
#include "protocol/prompt_image.hpp"
#include "runtime/vision/vision_encode.hpp"
#include "runtime/vision/vision_weights.hpp"

namespace anchorage {

class cuda_vision_encoder;

class vision_tower {
 public:
  // `where` picks the encoder. cuda copies the weights to the device here and throws
  // std::invalid_argument when this build has no CUDA kernels (no fallback to the CPU: a caller
  // that asked for the device learns at once that it has none) or no device is present, and
  // std::runtime_error when the copy fails (out of device memory). Throws std::invalid_argument
  // without weights.
  vision_tower(std::shared_ptr<const vision_weights> weights, std::size_t cache_bytes,
               kernels::backend where = kernels::backend::cpu);

  const vision_config& config() const { return weights_->config; }
  kernels::backend where() const { return cuda_ ? kernels::backend::cuda : kernels::backend::cpu; }
  // The embeddings of `image`'s rows (rows() x out_hidden_size floats): from the cache by its
  // digest, else encoded from its patches (and kept). Throws std::invalid_argument when the
  // image has no patches, a grid the encoder refuses, or a merge size other than the tower's.
  std::shared_ptr<const std::vector<float>> embeddings(const prompt_image& image);
  // Whether the cache holds `image`'s rows (no encoding, no change to the order).
  bool cached(const prompt_image& image) const;
  // The job that encodes those of `images` the cache does not hold (each digest once), for the
  // vision encoder; nullptr when the cache holds them all, or when the tower encodes on the device
  // (its encoder is quick and its device the engine's: embeddings() encodes there, in place).
  vision_encode_ptr plan_encode(const std::vector<prompt_image>& images) const;
  // A planned job's outcome: each image's rows kept (as embeddings() keeps what it encodes) and
  // counted as an encode, with its time. Rows of a failed job up to the failure count too.
  void take_encoded(const vision_encode& job);
  // A new budget for the cache (an operator's live setting): the least recently used entries go
  // until the rest fit; 0 keeps nothing from now on.
  void set_limit(std::uint64_t bytes);
  // Drops every entry (a clear of the caches); the counters stay.
  void clear();
  vision_stats stats() const;

 private:
  using key = std::pair<std::uint64_t, std::uint64_t>;
  struct entry {
    std::shared_ptr<const std::vector<float>> rows;
    std::list<key>::iterator age;
  };
  void keep(const key& k, std::shared_ptr<const std::vector<float>> rows);
  // Drops the least recently used entries until `incoming` more bytes fit the limit.
  void make_room(std::uint64_t incoming);

  std::shared_ptr<const vision_weights> weights_;
  std::shared_ptr<const cuda_vision_encoder> cuda_;  // set when the tower encodes on the device
  std::map<key, entry> cache_;
  std::list<key> ages_;  // most recent first
  vision_stats stats_;
};

}  // namespace anchorage
