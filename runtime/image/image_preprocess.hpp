#pragma once
// The Qwen3.5 image processor, one entry point: a decoded image in, the vision encoder's patches
// out, as HF's `Qwen2VLImageProcessor._preprocess` (the slow, PIL-backed processor) makes them:
// smart_resize (runtime/image/smart_resize.hpp), Pillow's bicubic resize
// (runtime/image/resize_bicubic.hpp), rescale and normalise, patches
// (runtime/image/image_patches.hpp). Pure and thread-safe: no state, no I/O.
#include "protocol/image_input.hpp"
#include "runtime/core/status.hpp"
#include "runtime/image/image_patches.hpp"
#include "runtime/image/image_processor_config.hpp"

namespace anchorage {

// Fails, with a message a user can read, for an image smart_resize refuses (a zero side, an
// aspect ratio above 200), a config check_image_processor_config refuses, or an `image` whose
// rgb does not hold width * height * 3 bytes. Limits on the decoded size are the decoder's
// (runtime/image/image_limits.hpp); the output here is 6 floats per resized pixel.
expected<image_patches> preprocess(const rgb_image& image, const image_processor_config& cfg);

}  // namespace anchorage
