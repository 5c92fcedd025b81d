// PNG through libpng's low-level (sequential) API. Its simplified API (png_image_*) would
// need no setjmp, but it applies gAMA and reads 16-bit files as linear light, converting both to
// sRGB: Pillow does neither, so the raw samples are read here and made RGB by Pillow's rules
// (runtime/image/image_decode.hpp).
//
// libpng reports errors by longjmp to the setjmp of the call that is running. C++ allows that only
// where replacing it by a throw would run no destructor: every libpng call is made from the two
// functions marked below, whose locals and whose callees' are trivially destructible; what they
// fill (the layout, the pixel rows) is owned by decode_png's frame, which no longjmp leaves.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/image/image_decode_formats.hpp"

namespace anchorage::image_detail {

namespace {

// The input and the last error, shared with libpng's callbacks.
struct png_input {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t pos = 0;
  char message[192] = {};
};

void read_bytes(png_structp png, png_bytep out, std::size_t n) {
  auto* in = static_cast<png_input*>(png_get_io_ptr(png));
  if (n > in->size - in->pos) png_error(png, "the data ends early");
  std::memcpy(out, in->data + in->pos, n);
  in->pos += n;
}

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* in = static_cast<png_input*>(png_get_error_ptr(png));
  std::snprintf(in->message, sizeof in->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

// What the header says, and the palette and tRNS a row conversion needs.
struct png_layout {
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int bit_depth = 0;
  int color_type = 0;
  bool interlaced = false;
  std::size_t rowbytes = 0;  // after png_set_packing: one byte a sample below 8 bits
  int palette_size = 0;      // PLTE entries
  png_color palette[256] = {};
  int alpha_size = 0;  // tRNS alpha entries (palette images)
  std::uint8_t alpha[256] = {};
  bool has_key = false;  // a grey tRNS key (colour type 0)
  std::uint16_t key = 0;
};

// longjmp target: reads the chunks up to the first IDAT and sets the transforms (packing only:
// the samples stay as stored, 16-bit ones big-endian). False with in->message on an error.
bool read_header(png_structp png, png_infop info, png_layout* layout) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  int interlace = 0;
  png_get_IHDR(png, info, &layout->width, &layout->height, &layout->bit_depth, &layout->color_type,
               &interlace, nullptr, nullptr);
  layout->interlaced = interlace != PNG_INTERLACE_NONE;
  if (layout->bit_depth < 8) png_set_packing(png);
  if (layout->interlaced) png_set_interlace_handling(png);
  png_colorp palette = nullptr;
  int palette_size = 0;
  if (png_get_PLTE(png, info, &palette, &palette_size) && palette != nullptr) {
    layout->palette_size = palette_size < 256 ? palette_size : 256;
    std::memcpy(layout->palette, palette, sizeof(png_color) * static_cast<std::size_t>(layout->palette_size));
  }
  png_bytep alpha = nullptr;
  int alpha_size = 0;
  png_color_16p key = nullptr;
  if (png_get_tRNS(png, info, &alpha, &alpha_size, &key)) {
    if (layout->color_type == PNG_COLOR_TYPE_PALETTE && alpha != nullptr) {
      layout->alpha_size = alpha_size < 256 ? alpha_size : 256;
      std::memcpy(layout->alpha, alpha, static_cast<std::size_t>(layout->alpha_size));
    } else if (layout->color_type == PNG_COLOR_TYPE_GRAY && key != nullptr) {
      layout->has_key = true;
      layout->key = key->gray;
    }
  }
  png_read_update_info(png, info);
  layout->rowbytes = png_get_rowbytes(png, info);
  return true;
}

std::uint8_t gray_scale(const png_layout& l, std::uint8_t raw) {
  switch (l.bit_depth) {
    case 1:
      return raw ? 255 : 0;
    case 2:
      return static_cast<std::uint8_t>(raw * 0x55);
    case 4:
      return static_cast<std::uint8_t>(raw * 0x11);
    default:
      return raw;
  }
}

// One row of samples as read to RGB, by Pillow's rules (runtime/image/image_decode.hpp).
void row_to_rgb(const png_layout& l, const std::uint8_t* row, std::uint8_t* out) {
  const bool wide = l.bit_depth == 16;
  const auto put = [&out](std::uint8_t r, std::uint8_t g, std::uint8_t b) {
    out[0] = r;
    out[1] = g;
    out[2] = b;
    out += 3;
  };
  for (png_uint_32 x = 0; x < l.width; ++x) {
    switch (l.color_type) {
      case PNG_COLOR_TYPE_GRAY: {
        // Pillow: 16-bit grey is mode I, clipped to 255 when made RGB; the key is compared with
        // the value (for 1-bit grey, Pillow >= 10 compares 0 or 255; 9.x compares the stored 0
        // or 1 with 0 or 255, which gives the same pixels since a transparent pixel and a 1 are
        // both white); below 8 bits the scaled value is compared with the stored key.
        std::uint32_t value;
        std::uint8_t gray;
        if (wide) {
          value = (std::uint32_t{row[2 * x]} << 8) | row[2 * x + 1];
          gray = value > 255 ? 255 : static_cast<std::uint8_t>(value);
        } else {
          gray = gray_scale(l, row[x]);
          value = gray;
        }
        const std::uint32_t key = l.bit_depth == 1 && l.key != 0 ? 255 : l.key;
        const bool transparent = l.has_key && value == key;
        const std::uint8_t v = transparent ? 255 : gray;
        put(v, v, v);
        break;
      }
      case PNG_COLOR_TYPE_RGB:  // Pillow opens it as RGB: a tRNS key is ignored
        if (wide) {
          put(row[6 * x], row[6 * x + 2], row[6 * x + 4]);
        } else {
          put(row[3 * x], row[3 * x + 1], row[3 * x + 2]);
        }
        break;
      case PNG_COLOR_TYPE_PALETTE: {
        const std::uint8_t i = row[x];
        const std::uint8_t a = i < l.alpha_size ? l.alpha[i] : 255;
        if (i < l.palette_size) {
          const png_color& c = l.palette[i];
          put(over_white(c.red, a), over_white(c.green, a), over_white(c.blue, a));
        } else {
          put(over_white(i, a), over_white(i, a), over_white(i, a));
        }
        break;
      }
      case PNG_COLOR_TYPE_GRAY_ALPHA: {
        const std::uint8_t g = wide ? row[4 * x] : row[2 * x];
        const std::uint8_t a = wide ? row[4 * x + 2] : row[2 * x + 1];
        const std::uint8_t v = over_white(g, a);
        put(v, v, v);
        break;
      }
      default: {  // PNG_COLOR_TYPE_RGB_ALPHA
        const std::uint8_t* p = wide ? row + 8 * x : row + 4 * x;
        const int step = wide ? 2 : 1;
        const std::uint8_t a = p[3 * step];
        put(over_white(p[0], a), over_white(p[step], a), over_white(p[2 * step], a));
        break;
      }
    }
  }
}

// longjmp target: reads the image's rows (all of them at once when interlaced, into `rows`;
// else one at a time into rows[0]) and converts them into `out`. False with in->message.
bool read_pixels(png_structp png, const png_layout* layout, png_bytepp rows, std::uint8_t* out) {
  if (setjmp(png_jmpbuf(png))) return false;
  const std::size_t out_stride = static_cast<std::size_t>(layout->width) * 3;
  if (layout->interlaced) {
    png_read_image(png, rows);
    for (png_uint_32 y = 0; y < layout->height; ++y) row_to_rgb(*layout, rows[y], out + y * out_stride);
  } else {
    for (png_uint_32 y = 0; y < layout->height; ++y) {
      png_read_row(png, rows[0], nullptr);
      row_to_rgb(*layout, rows[0], out + y * out_stride);
    }
  }
  return true;
}

// Frees libpng's structs however decode_png returns.
struct read_struct_owner {
  explicit read_struct_owner(png_structp p) : png(p), info(png_create_info_struct(p)) {}
  ~read_struct_owner() { png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr); }
  read_struct_owner(const read_struct_owner&) = delete;
  read_struct_owner& operator=(const read_struct_owner&) = delete;

  png_structp png;
  png_infop info;
};

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

expected<rgb_image> decode_png(const std::uint8_t* data, std::size_t size, const image_limits& limits) {
  // The signature, then IHDR: length 13, type, width, height, depth, colour type, ... and a CRC.
  constexpr std::size_t ihdr_end = 8 + 8 + 13 + 4;
  if (size < ihdr_end) {
    return truncated_or_corrupt(image_format::png,
                                "the data ends inside the header (" + std::to_string(size) + " bytes)");
  }
  if (be32(data + 8) != 13 || std::memcmp(data + 12, "IHDR", 4) != 0) {
    return truncated_or_corrupt(image_format::png, "the first chunk is not a 13-byte IHDR");
  }
  if (status s = check_image_size(image_format::png, be32(data + 16), be32(data + 20), limits); !s) return s;

  png_input in;
  in.data = data;
  in.size = size;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &in, on_error, on_warning);
  if (png == nullptr) return status::failure("PNG: libpng could not start");
  const read_struct_owner owner(png);
  png_infop info = owner.info;
  if (info == nullptr) return status::failure("PNG: libpng could not start");
  png_set_read_fn(png, &in, read_bytes);
  // What libpng calls benign (a bad ancillary chunk, too much image data) is a warning, as
  // Pillow reads past such things too.
  png_set_benign_errors(png, 1);
  png_set_user_limits(png, limits.max_side, limits.max_side);

  png_layout layout;
  if (!read_header(png, info, &layout)) return truncated_or_corrupt(image_format::png, in.message);

  rgb_image image = blank_image(layout.width, layout.height);
  std::vector<std::uint8_t> raw(layout.rowbytes * (layout.interlaced ? layout.height : 1));
  std::vector<png_bytep> rows(layout.interlaced ? layout.height : 1);
  for (std::size_t y = 0; y < rows.size(); ++y) rows[y] = raw.data() + y * layout.rowbytes;
  if (!read_pixels(png, &layout, rows.data(), image.rgb.data())) {
    return truncated_or_corrupt(image_format::png, in.message);
  }
  return image;
}

}  // namespace anchorage::image_detail
