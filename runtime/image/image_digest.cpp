#include "runtime/image/image_digest.hpp"

#include <array>
#include <cstring>
#include <new>
#include <string_view>

#include <xxhash.h>

#include "runtime/core/little_endian.hpp"

namespace anchorage {

namespace {

constexpr std::string_view domain_tag = "anchorage image v1";

void put_u32(XXH3_state_t* state, std::uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                              static_cast<unsigned char>(v >> 16), static_cast<unsigned char>(v >> 24)};
  XXH3_128bits_update(state, b, sizeof b);
}

// The values as float32 little-endian bytes: the memory itself on a little-endian host,
// byte-swapped through a small buffer elsewhere.
void put_floats(XXH3_state_t* state, const std::vector<float>& values) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  XXH3_128bits_update(state, values.data(), values.size() * sizeof(float));
#else
  std::array<unsigned char, 4096> buf;
  std::size_t used = 0;
  for (float f : values) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    for (int i = 0; i < 4; ++i) buf[used++] = static_cast<unsigned char>(bits >> (8 * i));
    if (used == buf.size()) {
      XXH3_128bits_update(state, buf.data(), used);
      used = 0;
    }
  }
  XXH3_128bits_update(state, buf.data(), used);
#endif
}

}  // namespace

std::string image_digest::hex() const { return little_endian::hex(hi) + little_endian::hex(lo); }

image_digest digest_of(const image_patches& patches, image_kind kind) {
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) throw std::bad_alloc();
  XXH3_128bits_reset(state);
  XXH3_128bits_update(state, domain_tag.data(), domain_tag.size());
  put_u32(state, static_cast<std::uint32_t>(kind));
  put_u32(state, static_cast<std::uint32_t>(patches.grid_t));
  put_u32(state, static_cast<std::uint32_t>(patches.grid_h));
  put_u32(state, static_cast<std::uint32_t>(patches.grid_w));
  put_u32(state, static_cast<std::uint32_t>(patches.channels));
  put_u32(state, static_cast<std::uint32_t>(patches.temporal_patch_size));
  put_u32(state, static_cast<std::uint32_t>(patches.patch_size));
  put_u32(state, static_cast<std::uint32_t>(patches.merge_size));
  put_floats(state, patches.values);
  const XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return image_digest{h.low64, h.high64};
}

}  // namespace anchorage
