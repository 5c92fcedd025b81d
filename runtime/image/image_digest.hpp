#pragma once
// The 128-bit digest of an image's processed pixels: what names the image in the key ids of its
// rows (runtime/image/image_rows.hpp) and so in every cache tier. It is taken over the patches
// the encoder reads, not the encoded file, so the same pixels sent as PNG or as WebP are one
// image, and a different processor setting (another resize, another mean) is another.
//
// THE HASHED BYTES (XXH3_128bits, seed 0), in order:
//   "anchorage image v1"                      18 bytes, the domain tag, no terminator
//   kind                                      u32 LE: 1 image, 2 video
//   grid_t, grid_h, grid_w                    u32 LE each
//   channels, temporal_patch_size,
//   patch_size, merge_size                    u32 LE each: the row geometry
//   values                                    float32 LE each, the patches' values in order
// A change of this layout is a new tag ("v2"): digests written under one never meet the other.
#include <cstdint>
#include <string>

#include "runtime/image/image_patches.hpp"

namespace anchorage {

enum class image_kind : std::uint32_t { image = 1, video = 2 };

struct image_digest {
  std::uint64_t lo = 0;  // XXH128_hash_t.low64
  std::uint64_t hi = 0;  // XXH128_hash_t.high64

  friend bool operator==(const image_digest& a, const image_digest& b) {
    return a.lo == b.lo && a.hi == b.hi;
  }
  friend bool operator!=(const image_digest& a, const image_digest& b) { return !(a == b); }

  // 32 hex digits, hi then lo (XXH128's canonical, big-endian spelling), for logs.
  std::string hex() const;
};

image_digest digest_of(const image_patches& patches, image_kind kind = image_kind::image);

}  // namespace anchorage
