#pragma once
// The key ids an image's placeholder rows carry. A prompt with an image holds, in place of its
// `<|image_pad|>`, one row per merged patch (runtime/image/image_patches.hpp: merged_rows()). The
// language model never reads these ids (the vision embeddings overwrite those rows), but every
// cache tier keys and compares prompts by their token ids: the ids of an image's rows must
// therefore name the image, so that two prompts match across an image exactly when they hold
// the same image, and never match a text token.
//
// THE IDS. Every id lies in [INT32_MIN, INT32_MIN + 2^30): negative, so never a vocabulary id
// (0 .. vocab_size - 1), and about 2^30 away from the small negative sentinels (no_token = -1).
// An id is INT32_MIN + a 30-bit payload, xored with a 30-bit constant of its row index (so an
// image's rows never repeat a pattern).
// - Rows 0 .. 3 carry bits 0..119 of the digest (runtime/image/image_digest.hpp) after a
//   bijective whitening (three Feistel rounds over its halves), 30 bits a row: each of these
//   rows depends on all 128 bits, so two digests that agree in their low 64 bits, or in any
//   structured part, still differ from the first row on (but for a 2^-30 chance a row).
// - Row 4 carries the whitened digest's bits 120..127 and the image's merged grid (rows down
//   and across, 11 bits each, up to image_max_grid_side): the prompt alone then says where each
//   image's rows take their rotary positions (image_key_of_rows), which a continuation over held
//   rows needs without the request's pixels.
// - Rows 0..4 (image_key_rows) are INJECTIVE in (digest, grid): image_key_of_rows inverts them.
// - Rows from image_key_rows on: a 30-bit hash of (digest, row index). Deterministic, not
//   periodic, and carrying nothing the first 5 rows do not already pin down.
//
// THE RULE FOR CALLERS: never resume (reuse a cached prefix that ends) INSIDE an image's first
// image_key_rows rows. A prefix match that ends there has compared only some 30-bit chunks of
// the digest, and two different images can share those: the cached rows would belong to another
// image. A match that covers all of an image's first image_key_rows rows has compared the whole
// digest, so the rest of that image's rows (and its grid, which the digest also covers) are the
// same image's. The prefix comparison enforces this; nothing here can.
//
// Every image has at least image_key_rows rows: check_image_processor_config requires pixel
// bounds that give it (runtime/image/image_processor_config.hpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/image/image_digest.hpp"

namespace anchorage {

// image_key_rows (how many leading rows carry the whole digest), the range every image row id
// lies in and is_image_row are runtime/core/token.hpp's: the prefix comparison needs them.
// Bits of payload per id.
inline constexpr int image_row_payload_bits = 30;
static_assert(image_row_id_end - image_row_id_first == (std::int64_t{1} << image_row_payload_bits));
// The longest side of a merged grid the ids can carry (2048 rows: 65,536 pixels at factor 32).
inline constexpr int image_max_grid_side = 2048;

// An image's merged grid: rows_h * rows_w rows in the prompt, in raster order.
struct image_grid {
  int rows_h = 0;
  int rows_w = 0;
  std::size_t rows() const { return static_cast<std::size_t>(rows_h) * static_cast<std::size_t>(rows_w); }
  bool operator==(const image_grid& o) const { return rows_h == o.rows_h && rows_w == o.rows_w; }
};

// What an image's first image_key_rows ids say.
struct image_key {
  image_digest digest;
  image_grid grid;
};

// The ids of an image's rows. Requires 1 <= rows_h, rows_w <= image_max_grid_side and
// grid.rows() >= image_key_rows (asserted: the processor never makes smaller images).
std::vector<token_id> image_row_ids(const image_digest& digest, image_grid grid);

// The digest and grid that `first` (an image's first image_key_rows ids, in order) encode;
// nullopt when they are not the start of any image's rows (an id out of range, bits that no
// image sets, fewer than image_key_rows ids). image_row_ids(key.digest, key.grid) starts with
// them again.
std::optional<image_key> image_key_of_rows(const token_id* first, std::size_t n);

}  // namespace anchorage
