#include "runtime/vision/vision_tower.hpp"

#include <set>
#include <stdexcept>
#include <string>

#include "runtime/vision/cuda_vision_encoder.hpp"
#include "runtime/vision/vision_encode.hpp"
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
  timed_rows done = encode_checked(weights_->config, image, [&](const float* patches, int t, int h, int w) {
    return cuda_ ? cuda_->encode(patches, t, h, w) : encode_image(*weights_, patches, t, h, w);
  });
  stats_.encode_ms += done.ms;
  ++stats_.encodes;
  keep(k, done.rows);
  return done.rows;
}

vision_encode_ptr vision_tower::plan_encode(const std::vector<prompt_image>& images) const {
  if (cuda_) return nullptr;
  auto job = std::make_shared<vision_encode>();
  job->weights = weights_;
  std::set<key> planned;
  for (const prompt_image& p : images) {
    const key k{p.digest_lo, p.digest_hi};
    if (cache_.count(k) || !planned.insert(k).second) continue;
    job->images.push_back(p);
  }
  return job->images.empty() ? nullptr : job;
}

void vision_tower::take_encoded(const vision_encode& job) {
  for (std::size_t i = 0; i < job.rows.size() && i < job.images.size(); ++i) {
    if (!job.rows[i]) continue;
    ++stats_.encodes;
    if (i < job.encode_ms.size()) stats_.encode_ms += job.encode_ms[i];
    const key k{job.images[i].digest_lo, job.images[i].digest_hi};
    if (cache_.count(k)) continue;  // another request's job kept it meanwhile
    keep(k, job.rows[i]);
  }
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
