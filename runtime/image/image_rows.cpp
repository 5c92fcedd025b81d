#include "runtime/image/image_rows.hpp"

#include <cassert>

namespace anchorage {

namespace {

constexpr std::uint64_t payload_mask = (std::uint64_t{1} << image_row_payload_bits) - 1;
constexpr unsigned grid_bits = 11;  // each side - 1, in row 4 above the digest's last 8 bits
constexpr std::uint64_t grid_mask = (std::uint64_t{1} << grid_bits) - 1;
static_assert(std::uint64_t{image_max_grid_side} == grid_mask + 1);
constexpr unsigned last_digest_bits = 128 - 4 * image_row_payload_bits;  // 8
static_assert(last_digest_bits + 2 * grid_bits == image_row_payload_bits);

// SplitMix64's finaliser: a bijection of 64-bit words that mixes every bit into every other.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The 30-bit constant a key row's payload is xored with: a function of the row index alone, so
// xoring it again gives the payload back.
std::uint64_t row_constant(std::size_t row) { return mix64(0x696d616765726f77ull ^ row) & payload_mask; }

// Three Feistel rounds over the digest's halves: a bijection (unwhiten inverts it) after which
// every bit of each half depends on every bit of the digest.
image_digest whiten(image_digest d) {
  d.hi ^= mix64(d.lo);
  d.lo ^= mix64(d.hi);
  d.hi ^= mix64(d.lo);
  return d;
}

image_digest unwhiten(image_digest d) {
  d.hi ^= mix64(d.lo);
  d.lo ^= mix64(d.hi);
  d.hi ^= mix64(d.lo);
  return d;
}

// Bits [30 * i, 30 * i + 30) of the 128-bit number hi:lo (i = 4 gives bits 120..127 only).
std::uint64_t chunk(const image_digest& d, std::size_t i) {
  const unsigned shift = static_cast<unsigned>(i) * image_row_payload_bits;
  std::uint64_t bits = 0;
  if (shift < 64) {
    bits = d.lo >> shift;
    if (shift > 0) bits |= d.hi << (64 - shift);
  } else {
    bits = d.hi >> (shift - 64);
  }
  return bits & payload_mask;
}

token_id id_of(std::uint64_t payload) {
  return static_cast<token_id>(image_row_id_first + static_cast<std::int64_t>(payload));
}

}  // namespace

std::vector<token_id> image_row_ids(const image_digest& digest, image_grid grid) {
  assert(grid.rows_h >= 1 && grid.rows_w >= 1 && grid.rows_h <= image_max_grid_side &&
         grid.rows_w <= image_max_grid_side && grid.rows() >= image_key_rows);
  std::vector<token_id> ids(grid.rows());
  const image_digest white = whiten(digest);
  for (std::size_t row = 0; row + 1 < image_key_rows; ++row)
    ids[row] = id_of(chunk(white, row) ^ row_constant(row));
  const std::uint64_t last = chunk(white, image_key_rows - 1) |
                             (static_cast<std::uint64_t>(grid.rows_h - 1) << last_digest_bits) |
                             (static_cast<std::uint64_t>(grid.rows_w - 1) << (last_digest_bits + grid_bits));
  ids[image_key_rows - 1] = id_of(last ^ row_constant(image_key_rows - 1));
  const std::uint64_t seed = mix64(digest.lo ^ mix64(digest.hi));
  for (std::size_t row = image_key_rows; row < ids.size(); ++row) {
    ids[row] = id_of(mix64(seed ^ mix64(row)) & payload_mask);
  }
  return ids;
}

std::optional<image_key> image_key_of_rows(const token_id* first, std::size_t n) {
  if (n < image_key_rows) return std::nullopt;
  image_digest d;
  image_key key;
  for (std::size_t row = 0; row < image_key_rows; ++row) {
    if (!is_image_row(first[row])) return std::nullopt;
    const auto payload = static_cast<std::uint64_t>(std::int64_t{first[row]} - image_row_id_first);
    std::uint64_t bits = payload ^ row_constant(row);
    if (row + 1 == image_key_rows) {
      key.grid.rows_h = static_cast<int>((bits >> last_digest_bits) & grid_mask) + 1;
      key.grid.rows_w = static_cast<int>((bits >> (last_digest_bits + grid_bits)) & grid_mask) + 1;
      bits &= (std::uint64_t{1} << last_digest_bits) - 1;
    }
    const unsigned shift = static_cast<unsigned>(row) * image_row_payload_bits;
    if (shift < 64) {
      d.lo |= bits << shift;
      if (shift + image_row_payload_bits > 64) d.hi |= bits >> (64 - shift);
    } else {
      d.hi |= bits << (shift - 64);
    }
  }
  if (key.grid.rows() < image_key_rows) return std::nullopt;
  key.digest = unwhiten(d);
  return key;
}

}  // namespace anchorage
