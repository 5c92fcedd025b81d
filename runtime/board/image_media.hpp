#pragma once
// The engine's images for a prompt the board serves (docs/IMAGES.md, "The board"): every run of
// image rows in the prompt is one image, its grid read from its key ids
// (runtime/image/image_rows.hpp); the images with rows the prefill forwards (at or above `from`)
// get their embeddings from what the run had encoded for it (`ready`), else from the vision tower,
// by the request's image of the same digest.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/prompt_image.hpp"
#include "runtime/engine/prompt_media.hpp"
#include "runtime/vision/vision_encode.hpp"
#include "runtime/vision/vision_tower.hpp"

namespace anchorage {

// Throws std::invalid_argument (the request fails with it) when a run of image rows is no
// image's (too short, ids no image sets, a length its grid does not give), when rows to forward
// belong to an image `images` does not hold, or when there is no tower to encode it.
prompt_media image_media(const std::vector<std::int32_t>& prompt, std::size_t from,
                         const std::vector<prompt_image>& images, vision_tower* tower, int d_model,
                         const encoded_rows* ready = nullptr);

// The images of `images` whose rows in `prompt` lie at or above `from` (in part), in the prompt's
// order (an image shown twice comes twice: vision_tower::plan_encode keeps each digest once),
// less those `ready` holds: what image_media would ask the tower for. A run of rows it cannot
// read is skipped (image_media refuses it).
std::vector<prompt_image> images_forwarded(const std::vector<std::int32_t>& prompt, std::size_t from,
                                           const std::vector<prompt_image>& images,
                                           const encoded_rows& ready);

}  // namespace anchorage
