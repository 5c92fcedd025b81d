#pragma once
// Image files made in the test with the formats' own encoders (libpng's low-level writer,
// TurboJPEG, giflib, libwebp), so a decoder test knows exactly which pixels a lossless file holds,
// plus the byte-level builders for what no encoder writes: a PNG header alone, a GIF whose raster
// holds indices past its colour table, a WebP VP8X header. Each builder returns the file's bytes
// and fails the test (REQUIRE) if its encoder fails.
#include <png.h>
#include <turbojpeg.h>
#include <gif_lib.h>
#include <webp/encode.h>

#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/core/crc32.hpp"

namespace anchorage::test {

using bytes = std::vector<std::uint8_t>;

inline void put_be32(bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}
inline void put_le16(bytes& out, unsigned v) {
  out.push_back(static_cast<std::uint8_t>(v));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
}
inline void put_le24(bytes& out, std::uint32_t v) {
  put_le16(out, v & 0xffff);
  out.push_back(static_cast<std::uint8_t>(v >> 16));
}
inline void put_le32(bytes& out, std::uint32_t v) {
  put_le16(out, v & 0xffff);
  put_le16(out, v >> 16);
}

// width x height pixels of `channels` bytes (3 or 4), smooth enough that a lossy codec keeps
// them close; alpha (channel 3) goes from 0 to 255 across each row.
inline bytes pattern_pixels(int width, int height, int channels) {
  bytes out;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) {
        out.push_back(c == 3 ? static_cast<std::uint8_t>((x * 255) / std::max(1, width - 1))
                             : static_cast<std::uint8_t>((x * 5 + y * 3 + c * 60) & 0xff));
      }
  return out;
}

// ---- PNG ------------------------------------------------------------------------------------

// What to write: `samples` holds one byte a sample below 16 bits (the value itself, libpng packs
// it) and two, big-endian, at 16; rows top to bottom.
struct png_spec {
  png_spec(std::uint32_t w, std::uint32_t h, int depth = 8, int type = PNG_COLOR_TYPE_RGB,
           bool interlace = false)
      : width(w), height(h), bit_depth(depth), color_type(type), interlaced(interlace) {}

  std::uint32_t width = 0;
  std::uint32_t height = 0;
  int bit_depth = 8;
  int color_type = PNG_COLOR_TYPE_RGB;
  bool interlaced = false;
  bytes samples;
  std::vector<std::array<std::uint8_t, 3>> palette;     // PLTE
  bytes palette_alpha;                                  // tRNS of a palette image
  std::optional<std::uint16_t> gray_key;                // tRNS of a grey image
  std::optional<std::array<std::uint16_t, 3>> rgb_key;  // tRNS of an RGB image
  std::optional<double> gamma;                          // gAMA
};

inline int png_channels(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY:
    case PNG_COLOR_TYPE_PALETTE:
      return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return 2;
    case PNG_COLOR_TYPE_RGB:
      return 3;
    default:
      return 4;
  }
}

namespace detail {

inline void png_append(png_structp png, png_bytep data, std::size_t n) {
  auto* out = static_cast<bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}
inline void png_no_flush(png_structp) {}
inline void png_no_warning(png_structp, png_const_charp) {}

// longjmp target: every libpng write call; its locals are trivially destructible.
inline bool png_write_all(png_structp png, png_infop info, const png_spec* spec, png_bytepp rows,
                          png_colorp palette, png_color_16p key) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, spec->width, spec->height, spec->bit_depth, spec->color_type,
               spec->interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!spec->palette.empty()) png_set_PLTE(png, info, palette, static_cast<int>(spec->palette.size()));
  if (!spec->palette_alpha.empty()) {
    png_set_tRNS(png, info, const_cast<png_bytep>(spec->palette_alpha.data()),
                 static_cast<int>(spec->palette_alpha.size()), nullptr);
  } else if (spec->gray_key || spec->rgb_key) {
    png_set_tRNS(png, info, nullptr, 0, key);
  }
  if (spec->gamma) png_set_gAMA(png, info, *spec->gamma);
  png_write_info(png, info);
  if (spec->bit_depth < 8) png_set_packing(png);
  if (spec->interlaced) png_set_interlace_handling(png);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

}  // namespace detail

inline bytes encode_png(const png_spec& spec) {
  const std::size_t row_samples = std::size_t(spec.width) * png_channels(spec.color_type);
  const std::size_t row_bytes = row_samples * (spec.bit_depth == 16 ? 2 : 1);
  REQUIRE(spec.samples.size() == row_bytes * spec.height);
  std::vector<png_bytep> rows(spec.height);
  for (std::uint32_t y = 0; y < spec.height; ++y) {
    rows[y] = const_cast<png_bytep>(spec.samples.data() + y * row_bytes);
  }
  std::vector<png_color> palette;
  for (const auto& c : spec.palette) palette.push_back(png_color{c[0], c[1], c[2]});
  png_color_16 key{};
  if (spec.gray_key) key.gray = *spec.gray_key;
  if (spec.rgb_key) {
    key.red = (*spec.rgb_key)[0];
    key.green = (*spec.rgb_key)[1];
    key.blue = (*spec.rgb_key)[2];
  }
  bytes out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, detail::png_no_warning);
  REQUIRE(png != nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, detail::png_append, detail::png_no_flush);
  png_set_benign_errors(png, 1);  // a palette index past the palette is written on purpose
  const bool ok = detail::png_write_all(png, info, &spec, rows.data(), palette.data(), &key);
  png_destroy_write_struct(&png, &info);
  REQUIRE(ok);
  return out;
}

// A PNG that stops after its IHDR, declaring what it is told (CRC correct): enough for a decoder
// that checks the declared size first, a truncated file to one that does not.
inline bytes png_header_only(std::uint32_t width, std::uint32_t height, int bit_depth = 8,
                             int color_type = PNG_COLOR_TYPE_RGB) {
  bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  put_be32(out, 13);
  const std::size_t type_at = out.size();
  for (char c : std::string("IHDR")) out.push_back(static_cast<std::uint8_t>(c));
  put_be32(out, width);
  put_be32(out, height);
  out.push_back(static_cast<std::uint8_t>(bit_depth));
  out.push_back(static_cast<std::uint8_t>(color_type));
  out.push_back(0);  // compression
  out.push_back(0);  // filter
  out.push_back(0);  // interlace
  put_be32(out, anchorage::crc32(out.data() + type_at, out.size() - type_at));
  return out;
}

// ---- JPEG -------------------------------------------------------------------------------------

// `pixels` in `pixel_format` (TJPF_RGB, TJPF_GRAY, TJPF_CMYK), quality 90.
inline bytes encode_jpeg(const bytes& pixels, int width, int height, int pixel_format, int subsampling,
                         int flags = 0) {
  tjhandle tj = tjInitCompress();
  REQUIRE(tj != nullptr);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(tj, pixels.data(), width, 0, height, pixel_format, &jpeg, &size, subsampling, 90, flags);
  const std::string error = rc != 0 ? tjGetErrorStr2(tj) : "";
  bytes out(jpeg, jpeg + (rc == 0 ? size : 0));
  tjFree(jpeg);
  tjDestroy(tj);
  INFO(error);
  REQUIRE(rc == 0);
  return out;
}

// ---- GIF --------------------------------------------------------------------------------------

struct gif_frame {
  int left = 0, top = 0, width = 0, height = 0;
  bool interlaced = false;
  std::vector<std::array<std::uint8_t, 3>> local_colors;  // a power of two entries, or none
  int transparent = -1;                                   // a graphic control extension's index
  bytes indices;                                          // width * height, rows top to bottom
};

namespace detail {
inline int gif_append(GifFileType* gif, const GifByteType* data, int n) {
  auto* out = static_cast<bytes*>(gif->UserData);
  out->insert(out->end(), data, data + n);
  return n;
}
inline ColorMapObject* gif_map(const std::vector<std::array<std::uint8_t, 3>>& colors) {
  if (colors.empty()) return nullptr;
  std::vector<GifColorType> c;
  for (const auto& rgb : colors) c.push_back(GifColorType{rgb[0], rgb[1], rgb[2]});
  return GifMakeMapObject(static_cast<int>(c.size()), c.data());
}
}  // namespace detail

// giflib writes the frames (GIF89a); rows of an interlaced frame are given top to bottom and
// written in the interlaced order.
inline bytes encode_gif(int screen_width, int screen_height,
                        const std::vector<std::array<std::uint8_t, 3>>& global,
                        const std::vector<gif_frame>& frames) {
  bytes out;
  int error = 0;
  GifFileType* gif = EGifOpen(&out, detail::gif_append, &error);
  REQUIRE(gif != nullptr);
  EGifSetGifVersion(gif, true);
  ColorMapObject* global_map = detail::gif_map(global);
  bool ok = EGifPutScreenDesc(gif, screen_width, screen_height, 8, 0, global_map) == GIF_OK;
  for (const gif_frame& f : frames) {
    if (f.transparent >= 0) {
      const GifByteType gce[4] = {1, 0, 0, static_cast<GifByteType>(f.transparent)};
      ok = ok && EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, gce) == GIF_OK;
    }
    ColorMapObject* local = detail::gif_map(f.local_colors);
    ok = ok && EGifPutImageDesc(gif, f.left, f.top, f.width, f.height, f.interlaced, local) == GIF_OK;
    std::vector<int> order;
    if (f.interlaced) {
      for (auto [start, step] : {std::pair{0, 8}, {4, 8}, {2, 4}, {1, 2}}) {
        for (int y = start; y < f.height; y += step) order.push_back(y);
      }
    } else {
      for (int y = 0; y < f.height; ++y) order.push_back(y);
    }
    for (int y : order) {
      bytes row(f.indices.begin() + y * f.width, f.indices.begin() + (y + 1) * f.width);
      ok = ok && EGifPutLine(gif, row.data(), f.width) == GIF_OK;
    }
    GifFreeMapObject(local);
  }
  GifFreeMapObject(global_map);
  ok = EGifCloseFile(gif, &error) == GIF_OK && ok;
  REQUIRE(ok);
  return out;
}

// A GIF89a written byte by byte, for what giflib's writer refuses: no colour table at all, or
// indices past the table's end. `table_bits` 0 means no global table, else 2^table_bits colours
// (grey ramps scaled by 37 so they are not Pillow's identity palette). The raster uses LZW's
// minimum code size 2 and a clear code before every index, so every code is 3 bits and indices
// go up to 3.
inline bytes handmade_gif(int width, int height, int table_bits, const bytes& indices, int transparent = -1) {
  bytes out = {'G', 'I', 'F', '8', '9', 'a'};
  put_le16(out, static_cast<unsigned>(width));
  put_le16(out, static_cast<unsigned>(height));
  out.push_back(table_bits > 0 ? static_cast<std::uint8_t>(0x80 | (table_bits - 1)) : 0);
  out.push_back(0);  // background
  out.push_back(0);  // aspect
  for (int i = 0; table_bits > 0 && i < (1 << table_bits); ++i) {
    for (int c = 0; c < 3; ++c) out.push_back(static_cast<std::uint8_t>(37 * i + 11 * c));
  }
  if (transparent >= 0) {
    for (int b : {0x21, 0xf9, 0x04, 0x01, 0x00, 0x00}) out.push_back(static_cast<std::uint8_t>(b));
    out.push_back(static_cast<std::uint8_t>(transparent));
    out.push_back(0);
  }
  out.push_back(',');
  put_le16(out, 0);
  put_le16(out, 0);
  put_le16(out, static_cast<unsigned>(width));
  put_le16(out, static_cast<unsigned>(height));
  out.push_back(0);  // no local table, not interlaced
  out.push_back(2);  // LZW minimum code size
  bytes codes;
  std::uint32_t acc = 0;
  int bits = 0;
  const auto put_code = [&](std::uint32_t code) {
    acc |= code << bits;
    bits += 3;
    while (bits >= 8) {
      codes.push_back(static_cast<std::uint8_t>(acc));
      acc >>= 8;
      bits -= 8;
    }
  };
  for (std::uint8_t i : indices) {
    put_code(4);  // clear
    put_code(i);
  }
  put_code(5);  // end of information
  if (bits > 0) codes.push_back(static_cast<std::uint8_t>(acc));
  for (std::size_t at = 0; at < codes.size(); at += 255) {
    const std::size_t n = std::min<std::size_t>(255, codes.size() - at);
    out.push_back(static_cast<std::uint8_t>(n));
    out.insert(out.end(), codes.begin() + at, codes.begin() + at + n);
  }
  out.push_back(0);    // end of the raster's sub-blocks
  out.push_back(';');  // trailer
  return out;
}

// A GIF's 13-byte header alone (no colour table): a logical screen of the size given.
inline bytes gif_header_only(unsigned width, unsigned height) {
  bytes out = {'G', 'I', 'F', '8', '9', 'a'};
  put_le16(out, width);
  put_le16(out, height);
  for (int i = 0; i < 3; ++i) out.push_back(0);
  return out;
}

// ---- WebP -------------------------------------------------------------------------------------

enum class webp_kind { lossless, lossy };

// `pixels` RGB (channels 3) or RGBA (channels 4); lossy at quality 80.
inline bytes encode_webp(const bytes& pixels, int width, int height, int channels, webp_kind kind) {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  const int stride = width * channels;
  if (kind == webp_kind::lossless) {
    size = channels == 4 ? WebPEncodeLosslessRGBA(pixels.data(), width, height, stride, &data)
                         : WebPEncodeLosslessRGB(pixels.data(), width, height, stride, &data);
  } else {
    size = channels == 4 ? WebPEncodeRGBA(pixels.data(), width, height, stride, 80, &data)
                         : WebPEncodeRGB(pixels.data(), width, height, stride, 80, &data);
  }
  bytes out(data, data + size);
  WebPFree(data);
  REQUIRE(size > 0);
  return out;
}

// RIFF, WEBP and a VP8X chunk declaring a canvas of width x height, `animated` or not, followed
// by `rest` (further chunks, as they are).
inline bytes webp_vp8x(std::uint32_t width, std::uint32_t height, bool animated, const bytes& rest = {}) {
  bytes body = {'W', 'E', 'B', 'P', 'V', 'P', '8', 'X'};
  put_le32(body, 10);
  body.push_back(animated ? 0x02 : 0x00);
  for (int i = 0; i < 3; ++i) body.push_back(0);
  put_le24(body, width - 1);
  put_le24(body, height - 1);
  body.insert(body.end(), rest.begin(), rest.end());
  bytes out = {'R', 'I', 'F', 'F'};
  put_le32(out, static_cast<std::uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

}  // namespace anchorage::test
