#pragma once
// Image bytes to 8-bit RGB (issue 27): PNG, JPEG, GIF (its first frame) and still WebP, decoded
// under image_limits, giving the pixels Hugging Face's pipeline gets from Pillow for the same file
// (tests/image/test_image_decode.cpp compares them byte for byte with tests/support/pil_decode.py):
//  - an image Pillow opens as RGB is taken as it is: a PNG's tRNS colour key on RGB is ignored;
//  - any other is made RGBA as Pillow's convert("RGBA") does and alpha-composited over opaque
//    white as Image.alpha_composite rounds, then made RGB. A fully transparent pixel is white.
//    Grey and palette images become RGB as convert("RGB") makes them: a palette index past the
//    palette's entries is the grey (i, i, i) Pillow's default palette holds there;
//  - 16-bit PNG samples keep their high byte, as Pillow's RGB;16B unpacker does, except 16-bit
//    grey, which Pillow reads as 32-bit integers and clips to 0..255 when it makes them RGB;
//    grey of 1, 2 or 4 bits is scaled to 0..255 and its tRNS key compared after scaling, as
//    Pillow does; gAMA, cHRM, sRGB and ICC profiles are not applied (Pillow applies none);
//  - JPEG: libjpeg-turbo's accurate integer IDCT and fancy upsampling, Pillow's defaults; a CMYK
//    or YCCK JPEG is read with Adobe's inverted polarity and made RGB by Pillow's cmyk2rgb
//    (r = (255 - k) - round(c * (255 - k) / 255)); corrupt-data warnings are tolerated as libjpeg
//    and Pillow tolerate them, data that ends before the image does is an error;
//  - GIF: the first frame drawn on a canvas the size of the logical screen, grown to hold the
//    frame if it reaches past it (as Pillow does); the canvas outside the frame is the frame's
//    transparent index when its graphic control extension names one (so white), else index 0;
//    the local colour table when there is one, else the global one, else grey (i, i, i);
//  - WebP: a still image, lossy or lossless, with or without alpha; an animated WebP is refused.
// EXIF orientation is not applied (Pillow's Image.open does not; transformers' load_image and
// some clients call exif_transpose before the processor, so a rotated photo reaches the model as
// it is stored).
//
// The declared size is read from the header first and checked (check_image_size) before any pixel
// buffer is allocated or any pixel decoded. Failures are values, never exceptions (std::bad_alloc
// aside) and never a crash on any input (fuzz/fuzz_image_decode.cpp): each says what is wrong in
// words a client can act on, naming the format. Thread-safe: no state is shared between calls.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "protocol/image_input.hpp"
#include "runtime/core/status.hpp"
#include "runtime/image/image_limits.hpp"

namespace anchorage {

enum class image_format { png, jpeg, gif, webp };

// "PNG", "JPEG", "GIF", "WebP".
const char* image_format_name(image_format format);

// The format the magic bytes name: PNG `\x89PNG\r\n\x1a\n`, JPEG `FF D8 FF`, GIF `GIF87a` or
// `GIF89a`, WebP `RIFF` <4 bytes> `WEBP`. nullopt for anything else, a prefix of those included.
std::optional<image_format> sniff_image_format(const std::uint8_t* data, std::size_t size);

// Ok when an image of `width` x `height` keeps `limits` (max_bytes aside): neither side 0, at most
// max_pixels pixels, no side over max_side, max(width, height) / min(width, height) at most
// max_aspect. A failure names the format and the declared size: "PNG image declares 50000 x 50000
// pixels, more than the limit of 33554432".
status check_image_size(image_format format, std::uint64_t width, std::uint64_t height,
                        const image_limits& limits);

// Decodes `size` bytes at `data` (nullptr allowed when size is 0). Fails when there are more than
// limits.max_bytes bytes, when the magic bytes name none of the four formats ("not a PNG, JPEG,
// GIF or WebP image"), when the declared size fails check_image_size, for an animated WebP, and
// for truncated or corrupt data ("truncated or corrupt GIF: ...").
expected<rgb_image> decode_image(const std::uint8_t* data, std::size_t size, const image_limits& limits = {});

}  // namespace anchorage
