// GIF through giflib's record-level API: the records up to the first image descriptor, then that
// frame's raster only (DGifSlurp would decode every frame). The frame is drawn as Pillow draws a
// GIF's first frame (runtime/image/image_decode.hpp): on the logical screen grown to hold it, the
// rest of the canvas index 0 or the transparent index, colours from the local table, else the
// global one, else grey.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/image/image_decode_formats.hpp"

namespace anchorage::image_detail {

namespace {

struct gif_input {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t pos;
};

// giflib's InputFunc: copies up to `n` bytes; fewer at the end, which giflib takes as an error.
int read_bytes(GifFileType* gif, GifByteType* out, int n) {
  auto* in = static_cast<gif_input*>(gif->UserData);
  const std::size_t take = std::min(static_cast<std::size_t>(n < 0 ? 0 : n), in->size - in->pos);
  std::memcpy(out, in->data + in->pos, take);
  in->pos += take;
  return static_cast<int>(take);
}

class gif_file {
 public:
  explicit gif_file(gif_input* in) : gif_(DGifOpen(in, read_bytes, &open_error_)) {}
  ~gif_file() {
    int error = 0;
    if (gif_ != nullptr) DGifCloseFile(gif_, &error);
  }
  gif_file(const gif_file&) = delete;
  gif_file& operator=(const gif_file&) = delete;
  GifFileType* get() const { return gif_; }
  int open_error() const { return open_error_; }

 private:
  int open_error_ = 0;
  GifFileType* gif_;
};

std::string gif_error(int code) {
  const char* text = GifErrorString(code);
  return text != nullptr ? text : "giflib error " + std::to_string(code);
}

// The colour of index `i`, made RGB as Pillow makes a GIF's P (or L) image RGB: the table's entry,
// or grey (i, i, i) past the table's end or without a table; white when it is the transparent one.
void put_index(const ColorMapObject* map, int transparent, int i, std::uint8_t* out) {
  if (i == transparent) {
    out[0] = out[1] = out[2] = 255;
  } else if (map != nullptr && i < map->ColorCount) {
    out[0] = map->Colors[i].Red;
    out[1] = map->Colors[i].Green;
    out[2] = map->Colors[i].Blue;
  } else {
    out[0] = out[1] = out[2] = static_cast<std::uint8_t>(i);
  }
}

}  // namespace

expected<rgb_image> decode_gif(const std::uint8_t* data, std::size_t size, const image_limits& limits) {
  gif_input in{data, size, 0};
  const gif_file file(&in);
  GifFileType* gif = file.get();
  if (gif == nullptr) return truncated_or_corrupt(image_format::gif, gif_error(file.open_error()));
  // The logical screen bounds the canvas from below: a screen over the limits fails here, before
  // anything else is read. Zero sides and the aspect ratio wait for the canvas (a frame grows it).
  image_limits screen_bounds = limits;
  screen_bounds.max_aspect = 1e18;
  if (gif->SWidth > 0 && gif->SHeight > 0) {
    if (status s = check_image_size(image_format::gif, static_cast<std::uint64_t>(gif->SWidth),
                                    static_cast<std::uint64_t>(gif->SHeight), screen_bounds);
        !s) {
      return s;
    }
  }

  // The records before the first image: a graphic control extension may name its transparent
  // index (the last one that does counts, as in Pillow); the others are skipped.
  int transparent = -1;
  for (;;) {
    GifRecordType record = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(gif, &record) == GIF_ERROR)
      return truncated_or_corrupt(image_format::gif, gif_error(gif->Error));
    if (record == IMAGE_DESC_RECORD_TYPE) break;
    if (record == TERMINATE_RECORD_TYPE)
      return truncated_or_corrupt(image_format::gif, "the file holds no image");
    if (record != EXTENSION_RECORD_TYPE) return truncated_or_corrupt(image_format::gif, "an unknown record");
    int code = 0;
    GifByteType* block = nullptr;
    if (DGifGetExtension(gif, &code, &block) == GIF_ERROR)
      return truncated_or_corrupt(image_format::gif, gif_error(gif->Error));
    // A graphic control block: length 4, then flags (bit 0: a transparent index), delay (2 bytes)
    // and the index.
    if (code == GRAPHICS_EXT_FUNC_CODE && block != nullptr && block[0] >= 4 && (block[1] & 1) != 0) {
      transparent = block[4];
    }
    while (block != nullptr) {
      if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) {
        return truncated_or_corrupt(image_format::gif, gif_error(gif->Error));
      }
    }
  }
  if (DGifGetImageDesc(gif) == GIF_ERROR)
    return truncated_or_corrupt(image_format::gif, gif_error(gif->Error));

  const GifImageDesc& frame = gif->Image;
  if (frame.Left < 0 || frame.Top < 0 || frame.Width < 0 || frame.Height < 0) {
    return truncated_or_corrupt(image_format::gif, "a frame with a negative position or size");
  }
  const std::uint64_t canvas_width = std::max<std::uint64_t>(static_cast<std::uint64_t>(gif->SWidth),
                                                             std::uint64_t(frame.Left) + frame.Width);
  const std::uint64_t canvas_height = std::max<std::uint64_t>(static_cast<std::uint64_t>(gif->SHeight),
                                                              std::uint64_t(frame.Top) + frame.Height);
  if (status s = check_image_size(image_format::gif, canvas_width, canvas_height, limits); !s) return s;

  const ColorMapObject* map = frame.ColorMap != nullptr ? frame.ColorMap : gif->SColorMap;
  rgb_image image =
      blank_image(static_cast<std::uint32_t>(canvas_width), static_cast<std::uint32_t>(canvas_height));
  std::uint8_t background[3];
  put_index(map, transparent, transparent >= 0 ? transparent : 0, background);
  for (std::size_t p = 0; p < image.rgb.size(); p += 3) std::memcpy(&image.rgb[p], background, 3);
  if (frame.Width == 0 || frame.Height == 0) return image;

  // Rows come in file order: top to bottom, or Adam-style in four passes when interlaced.
  std::vector<GifPixelType> line(static_cast<std::size_t>(frame.Width));
  const int starts[4] = {0, 4, 2, 1};
  const int steps[4] = {8, 8, 4, 2};
  const int passes = frame.Interlace ? 4 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    const int start = frame.Interlace ? starts[pass] : 0;
    const int step = frame.Interlace ? steps[pass] : 1;
    for (int y = start; y < frame.Height; y += step) {
      if (DGifGetLine(gif, line.data(), frame.Width) == GIF_ERROR) {
        return truncated_or_corrupt(image_format::gif, gif_error(gif->Error));
      }
      std::uint8_t* out = image.rgb.data() + ((std::size_t(frame.Top) + y) * canvas_width + frame.Left) * 3;
      for (int x = 0; x < frame.Width; ++x) put_index(map, transparent, line[x], out + 3 * x);
    }
  }
  return image;
}

}  // namespace anchorage::image_detail
