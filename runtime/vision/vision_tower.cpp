#include "runtime/vision/vision_tower.hpp"

#include <chrono>
#include <stdexcept>
#include <string>

#include "runtime/vision/cuda_vision_encoder.hpp"
#include "runtime/vision/vision_encoder.hpp"

namespace anchorage {
namespace {

std::uint64_t bytes_of(const std::vector<float>& rows) { return rows.size() * sizeof(float); }

}  // namespace

vision_tower::vision_tower(std::shared_ptr<const vision_weights> weights, std::size_t cache_bytes,
                           kernels::backend where)
    : weights_(std::move(weights)) {
  if (!weights_) throw std::invalid_argument("vision_tower: no weights");
  if (where == kernels::backend::cuda) cuda_ = std::make_shared<const cuda_vision_encoder>(*weights_);
  stats_.limit_bytes = cache_bytes;
}

bool vision_tower::cached(const prompt_image& image) const {
  return cache_.count(key{image.digest_lo, image.digest_hi}) > 0;
}

std::shared_ptr<const std::vector<float>> vision_tower::embeddings(const prompt_image& image) {
  const key k{image.digest_lo, image.digest_hi};
  if (auto it = cache_.find(k); it != cache_.end()) {
    ages_.splice(ages_.begin(), ages_, it->second.age);
    ++stats_.hits;
    return it->second.rows;
  }
  const vision_config& c = weights_->config;
  if (image.merge != c.spatial_merge_size)
    throw std::invalid_argument("an image merged " + std::to_string(image.merge) + " x " +
                                std::to_string(image.merge) + " for a tower that merges " +
                                std::to_string(c.spatial_merge_size));
  const std::size_t patch_rows = static_cast<std::size_t>(image.grid_t) * image.grid_h * image.grid_w;
  if (!image.patches || image.patches->size() != patch_rows * static_cast<std::size_t>(c.patch_values()))
    throw std::invalid_argument("an image's patches are missing or not " + std::to_string(c.patch_values()) +
                                " values a patch");
  const auto t0 = std::chrono::steady_clock::now();
  auto rows = std::make_shared<const std::vector<float>>(
      cuda_ ? cuda_->encode(image.patches->data(), image.grid_t, image.grid_h, image.grid_w)
            : encode_image(*weights_, image.patches->data(), image.grid_t, image.grid_h, image.grid_w));
  stats_.encode_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++stats_.encodes;
  keep(k, rows);
  return rows;
}

void vision_tower::keep(const key& k, std::shared_ptr<const std::vector<float>> rows) {
  const std::uint64_t b = bytes_of(*rows);
  if (b > stats_.limit_bytes) return;
  make_room(b);
  ages_.push_front(k);
  cache_[k] = entry{std::move(rows), ages_.begin()};
  stats_.bytes += b;
  stats_.entries = cache_.size();
}

void vision_tower::make_room(std::uint64_t incoming) {
  while (stats_.bytes + incoming > stats_.limit_bytes && !ages_.empty()) {
    auto it = cache_.find(ages_.back());
    stats_.bytes -= bytes_of(*it->second.rows);
    cache_.erase(it);
    ages_.pop_back();
  }
  stats_.entries = cache_.size();
}

void vision_tower::set_limit(std::uint64_t bytes) {
  stats_.limit_bytes = bytes;
  make_room(0);
}

void vision_tower::clear() {
  cache_.clear();
  ages_.clear();
  stats_.bytes = 0;
  stats_.entries = 0;
}

vision_stats vision_tower::stats() const {
  vision_stats s = stats_;
  s.entries = cache_.size();
  return s;
}

}  // namespace anchorage
