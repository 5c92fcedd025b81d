#include "runtime/engine/prompt_media.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace anchorage {

prompt_media::prompt_media(std::vector<image_span> images, int d_model) : images_(std::move(images)) {
  std::size_t after = 0;
  for (std::size_t i = 0; i < images_.size(); ++i) {
    const image_span& s = images_[i];
    const std::string name = "image " + std::to_string(i) + " (rows from " + std::to_string(s.start) + ")";
    if (s.grid_h <= 0 || s.grid_w <= 0) throw std::invalid_argument(name + ": empty grid");
    if (s.start < after)
      throw std::invalid_argument(name + ": overlaps the image before it or is out of order");
    if (s.embeddings && s.embeddings->size() != s.rows() * static_cast<std::size_t>(d_model))
      throw std::invalid_argument(name + ": needs " + std::to_string(s.rows()) + " embedding rows of " +
                                  std::to_string(d_model) + " floats");
    after = s.end();
  }
}

const image_span* prompt_media::span_of(std::size_t row) const {
  auto it = std::upper_bound(images_.begin(), images_.end(), row,
                             [](std::size_t r, const image_span& s) { return r < s.start; });
  if (it == images_.begin()) return nullptr;
  --it;
  return row < it->end() ? &*it : nullptr;
}

std::size_t prompt_media::next_end(std::size_t row) const {
  for (const image_span& s : images_)
    if (s.end() > row) return s.end();
  return SIZE_MAX;
}

std::array<int, 3> prompt_media::position(std::size_t row) const {
  std::size_t skipped = 0;  // rows of earlier images beyond the positions they take
  for (const image_span& s : images_) {
    if (row < s.start) break;
    const std::size_t p = s.start - skipped;
    if (row < s.end()) {
      const std::size_t i = row - s.start;
      const std::size_t y = i / static_cast<std::size_t>(s.grid_w),
                        x = i % static_cast<std::size_t>(s.grid_w);
      return {static_cast<int>(p), static_cast<int>(p + y), static_cast<int>(p + x)};
    }
    skipped += s.rows() - static_cast<std::size_t>(std::max(s.grid_h, s.grid_w));
  }
  const int p = static_cast<int>(row - skipped);
  return {p, p, p};
}

std::vector<int> prompt_media::positions(std::size_t from, std::size_t n) const {
  std::vector<int> out;
  out.reserve(3 * n);
  for (std::size_t r = from; r < from + n; ++r) {
    const std::array<int, 3> p = position(r);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

}  // namespace anchorage
