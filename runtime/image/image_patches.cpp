#include "runtime/image/image_patches.hpp"

#include <array>
#include <cassert>
#include <cstdint>

namespace anchorage {

namespace {

// The normalised value of every 8-bit level of one channel, computed as HF computes it.
std::array<float, 256> channel_table(float mean, float std) {
  std::array<float, 256> t{};
  const double rescale = 1.0 / 255.0;  // Python's 1 / 255
  for (int x = 0; x < 256; ++x) {
    const float rescaled = static_cast<float>(static_cast<double>(x) * rescale);
    t[static_cast<std::size_t>(x)] = (rescaled - mean) / std;
  }
  return t;
}

}  // namespace

image_patches patches_of(const rgb_image& resized, const image_processor_config& cfg) {
  assert(check_image_processor_config(cfg).is_ok());
  const int factor = cfg.factor();
  assert(resized.width > 0 && resized.height > 0);
  assert(resized.width % static_cast<std::uint32_t>(factor) == 0);
  assert(resized.height % static_cast<std::uint32_t>(factor) == 0);
  assert(resized.rgb.size() == std::size_t{resized.width} * resized.height * 3);

  image_patches out;
  out.grid_t = 1;
  out.grid_h = static_cast<int>(resized.height) / cfg.patch_size;
  out.grid_w = static_cast<int>(resized.width) / cfg.patch_size;
  out.channels = 3;
  out.temporal_patch_size = cfg.temporal_patch_size;
  out.patch_size = cfg.patch_size;
  out.merge_size = cfg.merge_size;
  out.values.resize(out.patch_rows() * out.row_values());

  const std::array<std::array<float, 256>, 3> tables = {channel_table(cfg.mean[0], cfg.std[0]),
                                                        channel_table(cfg.mean[1], cfg.std[1]),
                                                        channel_table(cfg.mean[2], cfg.std[2])};
  const std::size_t p = static_cast<std::size_t>(cfg.patch_size);
  const std::size_t m = static_cast<std::size_t>(cfg.merge_size);
  const std::size_t frames = static_cast<std::size_t>(cfg.temporal_patch_size);
  const std::size_t stride = std::size_t{resized.width} * 3;
  const std::size_t blocks_h = static_cast<std::size_t>(out.grid_h) / m;
  const std::size_t blocks_w = static_cast<std::size_t>(out.grid_w) / m;

  float* dst = out.values.data();
  for (std::size_t br = 0; br < blocks_h; ++br) {
    for (std::size_t bc = 0; bc < blocks_w; ++bc) {
      for (std::size_t ir = 0; ir < m; ++ir) {
        for (std::size_t ic = 0; ic < m; ++ic) {
          // One patch row: its top-left pixel, then (channel, frame, y, x).
          const std::size_t top = (br * m + ir) * p;
          const std::size_t left = (bc * m + ic) * p;
          for (std::size_t c = 0; c < 3; ++c) {
            const std::array<float, 256>& table = tables[c];
            for (std::size_t f = 0; f < frames; ++f) {  // every frame is the same still image
              for (std::size_t y = 0; y < p; ++y) {
                const std::uint8_t* src = resized.rgb.data() + (top + y) * stride + left * 3 + c;
                for (std::size_t x = 0; x < p; ++x) *dst++ = table[src[x * 3]];
              }
            }
          }
        }
      }
    }
  }
  assert(dst == out.values.data() + out.values.size());
  return out;
}

}  // namespace anchorage
