#pragma once
// The images of a prompt as the engine reads them (docs/IMAGES.md, "The engine"): where each
// image's rows lie, its merged grid and its rows' embeddings (the vision encoder's output, one
// d_model row per image row). The rows themselves carry key ids, not vocabulary ids
// (runtime/image/image_rows.hpp): the engine takes their embeddings from here and their
// positions from Qwen3.5's multimodal rotary rule.
//
// Positions (transformers' get_rope_index for a still image): a text row at running position p
// has (p, p, p); an image whose first row would sit at p gives its row (y, x) of the merged grid
// (p, p + y, p + x), and the text after it continues at p + max(grid_h, grid_w). Rows past the
// last image (generated tokens included) are text.
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace anchorage {

struct image_span {
  std::size_t start = 0;  // the image's first row in the prompt
  int grid_h = 0;         // the merged grid: grid_h * grid_w rows, in raster order
  int grid_w = 0;
  // grid_h * grid_w rows of d_model floats; null for an image whose rows all lie below what the
  // engine will forward (a continuation over held rows needs only its positions).
  std::shared_ptr<const std::vector<float>> embeddings;

  std::size_t rows() const { return static_cast<std::size_t>(grid_h) * static_cast<std::size_t>(grid_w); }
  std::size_t end() const { return start + rows(); }
};

class prompt_media {
 public:
  prompt_media() = default;
  // Spans in prompt order, none overlapping, each with rows() * d_model embeddings or none;
  // otherwise std::invalid_argument naming the span.
  prompt_media(std::vector<image_span> images, int d_model);

  bool empty() const { return images_.empty(); }
  const std::vector<image_span>& images() const { return images_; }
  // The span holding `row`, or null.
  const image_span* span_of(std::size_t row) const;
  // The first image end above `row` (the row after an image's last), or SIZE_MAX when none.
  std::size_t next_end(std::size_t row) const;
  // Row `row`'s (temporal, height, width) positions.
  std::array<int, 3> position(std::size_t row) const;
  // positions of rows [from, from + n) as 3n ints.
  std::vector<int> positions(std::size_t from, std::size_t n) const;

 private:
  std::vector<image_span> images_;
};

}  // namespace anchorage
