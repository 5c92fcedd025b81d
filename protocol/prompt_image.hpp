#pragma once
// One image of a served prompt (docs/IMAGES.md): where its rows lie, the processor's patches and
// their digest. The prompt holds its rows' key ids (runtime/image/image_rows.hpp); the board
// turns the patches into the rows' embeddings (the vision encoder, or its cache by digest) and
// hands them to the engine with the positions the grid gives.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace anchorage {

struct prompt_image {
  std::size_t start = 0;  // the image's first row in the prompt
  int grid_t = 1;         // the patch grid (frames, patches down, across); the image has
  int grid_h = 0;         // grid_t * grid_h * grid_w / merge^2 rows
  int grid_w = 0;
  int merge = 2;
  std::uint64_t digest_lo = 0;  // runtime/image/image_digest.hpp: over the patches, grid and kind
  std::uint64_t digest_hi = 0;
  std::shared_ptr<const std::vector<float>> patches;  // the processor's values, row by row

  std::size_t rows() const {
    return static_cast<std::size_t>(grid_t) * static_cast<std::size_t>(grid_h / merge) *
           static_cast<std::size_t>(grid_w / merge);
  }
  std::size_t end() const { return start + rows(); }
};

}  // namespace anchorage
