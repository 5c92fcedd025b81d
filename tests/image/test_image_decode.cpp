// decode_image (runtime/image/image_decode.hpp) on files made here by the formats' own encoders
// (tests/support/image_fixtures.hpp): a lossless file decodes to exactly the pixels written (after
// compositing over white), and every file to exactly what Pillow gives under the processors' RGB
// rule (tests/support/pil_decode.py, skipped with a WARN when no Python has PIL). The inputs it
// refuses: tests/image/test_image_decode_refusals.cpp.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/image/image_decode.hpp"
#include "tests/support/image_fixtures.hpp"
#include "tests/support/pil_decode.hpp"

using namespace anchorage;
using anchorage::test::bytes;
using anchorage::test::pattern_pixels;
using anchorage::test::pil_decode;
using anchorage::test::pil_result;

namespace {

// The expected pixels are computed independently of the decoder's arithmetic: exact rounding of
// c * a / 255 + 255 * (255 - a) / 255 (never a tie: the sum times 2 is never an odd multiple of 255).
std::uint8_t composite(int c, int a) {
  return static_cast<std::uint8_t>(((c * a + 255 * (255 - a)) * 2 + 255) / 510);
}

rgb_image image_of(std::uint32_t width, std::uint32_t height, bytes rgb) {
  REQUIRE(rgb.size() == std::size_t(width) * height * 3);
  return rgb_image{width, height, std::move(rgb)};
}

// A pattern with every channel varying, deterministic.
std::uint8_t pattern(std::uint32_t x, std::uint32_t y, int channel) {
  return static_cast<std::uint8_t>((x * 37 + y * 91 + channel * 53 + x * y * 7) & 0xff);
}

struct fixture {
  std::string name;
  bytes file;
  rgb_image expected;  // the pixels written; width 0 when only Pillow can say (lossy)
};

rgb_image must_decode(const bytes& file, const image_limits& limits = {}) {
  auto decoded = decode_image(file.data(), file.size(), limits);
  INFO(decoded.error().error());
  REQUIRE(decoded.has_value());
  return std::move(*decoded);
}

// Where two images first differ, for the failure message.
std::string first_difference(const rgb_image& a, const rgb_image& b) {
  if (a.width != b.width || a.height != b.height) {
    return std::to_string(a.width) + "x" + std::to_string(a.height) + " vs " + std::to_string(b.width) + "x" +
           std::to_string(b.height);
  }
  for (std::size_t i = 0; i < a.rgb.size() && i < b.rgb.size(); ++i) {
    if (a.rgb[i] != b.rgb[i]) {
      const std::size_t p = i / 3;
      return "pixel (" + std::to_string(p % a.width) + ", " + std::to_string(p / a.width) + ") channel " +
             std::to_string(i % 3) + ": " + std::to_string(a.rgb[i]) + " vs " + std::to_string(b.rgb[i]);
    }
  }
  return "same";
}

double mean_difference(const rgb_image& a, const rgb_image& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.rgb.size(); ++i) sum += std::abs(int(a.rgb[i]) - int(b.rgb[i]));
  return sum / static_cast<double>(a.rgb.size());
}

// Decodes every fixture, checks it against its expected pixels when it has them, then against
// Pillow (all in one Python run).
void check_fixtures(const std::vector<fixture>& fixtures) {
  std::vector<rgb_image> decoded;
  for (const fixture& f : fixtures) {
    INFO(f.name);
    decoded.push_back(must_decode(f.file));
    if (f.expected.width != 0) {
      INFO(first_difference(decoded.back(), f.expected));
      CHECK(decoded.back().width == f.expected.width);
      CHECK(decoded.back().height == f.expected.height);
      CHECK(decoded.back().rgb == f.expected.rgb);
    }
  }
  std::vector<bytes> files;
  for (const fixture& f : fixtures) files.push_back(f.file);
  const std::vector<pil_result> pil = pil_decode(files);
  if (pil.empty()) {
    WARN("skipped: the comparison with Pillow (no Python with PIL: apt-get install python3-pil)");
    return;
  }
  for (std::size_t i = 0; i < fixtures.size(); ++i) {
    INFO(fixtures[i].name);
    const auto* image = std::get_if<rgb_image>(&pil[i]);
    INFO((image ? "" : "Pillow failed: " + std::get<std::string>(pil[i])));
    REQUIRE(image != nullptr);
    INFO(first_difference(decoded[i], *image));
    CHECK(decoded[i].width == image->width);
    CHECK(decoded[i].height == image->height);
    CHECK(decoded[i].rgb == image->rgb);
  }
}

// ---- PNG fixtures ---------------------------------------------------------------------------------

fixture png_rgb8() {
  test::png_spec s{13, 7};
  for (std::uint32_t y = 0; y < s.height; ++y)
    for (std::uint32_t x = 0; x < s.width; ++x)
      for (int c = 0; c < 3; ++c) s.samples.push_back(pattern(x, y, c));
  return {"PNG RGB 8", test::encode_png(s), image_of(13, 7, s.samples)};
}

// Every (colour, alpha) pair: x is the red value, y the alpha; green and blue other values.
fixture png_rgba8_every_pair() {
  test::png_spec s{256, 256, 8, PNG_COLOR_TYPE_RGB_ALPHA};
  bytes expected;
  for (int a = 0; a < 256; ++a) {
    for (int r = 0; r < 256; ++r) {
      const int g = 255 - r, b = (r * 7 + a) & 0xff;
      for (int v : {r, g, b, a}) s.samples.push_back(static_cast<std::uint8_t>(v));
      for (int v : {r, g, b}) expected.push_back(composite(v, a));
    }
  }
  return {"PNG RGBA 8, every (colour, alpha)", test::encode_png(s), image_of(256, 256, expected)};
}

fixture png_gray(int depth) {
  test::png_spec s{9, 5, depth, PNG_COLOR_TYPE_GRAY};
  bytes expected;
  const int max = (1 << depth) - 1;
  for (std::uint32_t y = 0; y < s.height; ++y) {
    for (std::uint32_t x = 0; x < s.width; ++x) {
      const int v = (pattern(x, y, 0) * 3) % (max + 1);
      s.samples.push_back(static_cast<std::uint8_t>(v));
      for (int c = 0; c < 3; ++c) expected.push_back(static_cast<std::uint8_t>(v * 255 / max));
    }
  }
  return {"PNG grey " + std::to_string(depth), test::encode_png(s), image_of(9, 5, expected)};
}

// 16-bit grey: Pillow reads 32-bit integers and clips them to 255; a key is compared with the
// 16-bit value.
fixture png_gray16(std::optional<int> key = std::nullopt) {
  test::png_spec s{6, 2, 16, PNG_COLOR_TYPE_GRAY};
  if (key) s.gray_key = static_cast<std::uint16_t>(*key);
  bytes expected;
  for (int v : {0, 1, 200, 255, 256, 300, 4095, 32768, 65535, 0x00ff, 0x0100, 0x1234}) {
    s.samples.push_back(static_cast<std::uint8_t>(v >> 8));
    s.samples.push_back(static_cast<std::uint8_t>(v));
    const bool transparent = key && v == *key;
    for (int c = 0; c < 3; ++c)
      expected.push_back(static_cast<std::uint8_t>(transparent ? 255 : std::min(v, 255)));
  }
  return {key ? "PNG grey 16 with key " + std::to_string(*key) : "PNG grey 16", test::encode_png(s),
          image_of(6, 2, expected)};
}

// A grey tRNS key at 1, 2, 4 or 8 bits.
fixture png_gray_key(int depth, int key) {
  test::png_spec s{4, 2, depth, PNG_COLOR_TYPE_GRAY};
  s.gray_key = static_cast<std::uint16_t>(key);
  const int max = (1 << depth) - 1;
  bytes expected;
  for (int i = 0; i < 8; ++i) {
    const int v = depth == 8 ? std::vector<int>{0, 77, 200, 77, 255, 1, 76, 78}[i] : i % (max + 1);
    s.samples.push_back(static_cast<std::uint8_t>(v));
    const int scaled = v * 255 / max;
    // Pillow compares the scaled value with the stored key (a 1-bit key of 1 stands for white),
    // so below 8 bits only a key of 0 ever matches.
    const bool transparent = depth == 1 ? (key != 0 ? 255 : 0) == scaled : scaled == key;
    for (int c = 0; c < 3; ++c) expected.push_back(static_cast<std::uint8_t>(transparent ? 255 : scaled));
  }
  return {"PNG grey " + std::to_string(depth) + " with key " + std::to_string(key), test::encode_png(s),
          image_of(4, 2, expected)};
}

fixture png_gray_alpha(int depth) {
  test::png_spec s{16, 4, depth, PNG_COLOR_TYPE_GRAY_ALPHA};
  bytes expected;
  for (int i = 0; i < 64; ++i) {
    const int g = (i * 45) & 0xff, a = (i * 4 + (i & 3) * 63) & 0xff;
    for (int v : {g, a}) {
      s.samples.push_back(static_cast<std::uint8_t>(v));
      if (depth == 16) s.samples.push_back(static_cast<std::uint8_t>(v ^ 0x5a));  // the low byte, dropped
    }
    for (int c = 0; c < 3; ++c) expected.push_back(composite(g, a));
  }
  return {"PNG grey+alpha " + std::to_string(depth), test::encode_png(s), image_of(16, 4, expected)};
}

fixture png_rgba16() {
  test::png_spec s{8, 4, 16, PNG_COLOR_TYPE_RGB_ALPHA};
  bytes expected;
  for (int i = 0; i < 32; ++i) {
    const int r = (i * 29) & 0xff, g = (i * 71) & 0xff, b = (i * 13) & 0xff, a = (i * 8 + 3) & 0xff;
    for (int v : {r, g, b, a}) {
      s.samples.push_back(static_cast<std::uint8_t>(v));
      s.samples.push_back(static_cast<std::uint8_t>(0xff - v));
    }
    for (int v : {r, g, b}) expected.push_back(composite(v, a));
  }
  return {"PNG RGBA 16", test::encode_png(s), image_of(8, 4, expected)};
}

// gAMA 1.0 on 16-bit samples: a gamma-correcting reader (libpng's simplified API) would change
// every value; Pillow keeps the high bytes.
fixture png_rgb16_gamma() {
  test::png_spec s{5, 3, 16, PNG_COLOR_TYPE_RGB};
  s.gamma = 1.0;
  bytes expected;
  for (std::uint32_t y = 0; y < 3; ++y) {
    for (std::uint32_t x = 0; x < 5; ++x) {
      for (int c = 0; c < 3; ++c) {
        s.samples.push_back(pattern(x, y, c));
        s.samples.push_back(pattern(y, x, c));
        expected.push_back(pattern(x, y, c));
      }
    }
  }
  return {"PNG RGB 16 with gAMA 1.0", test::encode_png(s), image_of(5, 3, expected)};
}

// A palette of `entries` colours, some with alpha, at `depth`, and indices up to `max_index`
// (past the palette's end when larger: Pillow gives grey (i, i, i) there).
fixture png_palette(int depth, int entries, int alpha_entries, int max_index) {
  test::png_spec s{16, 3, depth, PNG_COLOR_TYPE_PALETTE};
  for (int i = 0; i < entries; ++i) {
    s.palette.push_back({static_cast<std::uint8_t>(i * 17 + 5), static_cast<std::uint8_t>(200 - i * 3),
                         static_cast<std::uint8_t>(i * 101)});
  }
  for (int i = 0; i < alpha_entries; ++i) s.palette_alpha.push_back(static_cast<std::uint8_t>(i * 77 % 256));
  bytes expected;
  for (int p = 0; p < 48; ++p) {
    const int i = (p * 7) % (max_index + 1);
    s.samples.push_back(static_cast<std::uint8_t>(i));
    const int a = i < alpha_entries ? s.palette_alpha[i] : 255;
    for (int c = 0; c < 3; ++c) expected.push_back(composite(i < entries ? s.palette[i][c] : i, a));
  }
  return {"PNG palette " + std::to_string(depth) + ", " + std::to_string(entries) + " colours, " +
              std::to_string(alpha_entries) + " alphas, indices to " + std::to_string(max_index),
          test::encode_png(s), image_of(16, 3, expected)};
}

// An RGB image's colour key: Pillow opens it as RGB and the processors keep RGB as it is.
fixture png_rgb_key() {
  fixture f = png_rgb8();
  test::png_spec s{13, 7};
  s.samples = f.expected.rgb;
  s.rgb_key = std::array<std::uint16_t, 3>{s.samples[0], s.samples[1], s.samples[2]};
  return {"PNG RGB with a tRNS key", test::encode_png(s), f.expected};
}

fixture png_rgba_interlaced() {
  test::png_spec s{11, 9, 8, PNG_COLOR_TYPE_RGB_ALPHA, true};
  bytes expected;
  for (std::uint32_t y = 0; y < s.height; ++y) {
    for (std::uint32_t x = 0; x < s.width; ++x) {
      const int a = (x * 23 + y * 41) & 0xff;
      for (int c = 0; c < 3; ++c) {
        s.samples.push_back(pattern(x, y, c));
        expected.push_back(composite(pattern(x, y, c), a));
      }
      s.samples.push_back(static_cast<std::uint8_t>(a));
    }
  }
  return {"PNG RGBA interlaced", test::encode_png(s), image_of(11, 9, expected)};
}

// ---- GIF fixtures -------------------------------------------------------------------------------

std::vector<std::array<std::uint8_t, 3>> colors(int n, int seed) {
  std::vector<std::array<std::uint8_t, 3>> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({static_cast<std::uint8_t>(i * 31 + seed), static_cast<std::uint8_t>(i * 67 + 2 * seed),
                   static_cast<std::uint8_t>(255 - i * 13 - seed)});
  }
  return out;
}

test::gif_frame gif_frame_of(int left, int top, int width, int height, int palette_size) {
  test::gif_frame f;
  f.left = left;
  f.top = top;
  f.width = width;
  f.height = height;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      f.indices.push_back(static_cast<std::uint8_t>((x * 3 + y * 5) % palette_size));
  return f;
}

// The canvas Pillow draws for a first frame: `fill` everywhere, then the frame.
rgb_image gif_expected(int width, int height, const std::vector<std::array<std::uint8_t, 3>>& table, int fill,
                       const test::gif_frame& f) {
  const auto color = [&](int i, int c) -> std::uint8_t { return i == f.transparent ? 255 : table[i][c]; };
  bytes rgb;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const bool inside = x >= f.left && x < f.left + f.width && y >= f.top && y < f.top + f.height;
      const int i = inside ? f.indices[(y - f.top) * f.width + (x - f.left)] : fill;
      for (int c = 0; c < 3; ++c) rgb.push_back(color(i, c));
    }
  }
  return image_of(width, height, rgb);
}

std::vector<fixture> gif_fixtures() {
  std::vector<fixture> out;
  const auto global = colors(4, 9);
  {  // the whole screen, the global table
    const auto f = gif_frame_of(0, 0, 9, 6, 4);
    out.push_back({"GIF", test::encode_gif(9, 6, global, {f}), gif_expected(9, 6, global, 0, f)});
  }
  {  // a frame inside the screen with a local table and a transparent index: the rest is white
    auto f = gif_frame_of(2, 3, 5, 4, 8);
    f.local_colors = colors(8, 40);
    f.transparent = 5;
    out.push_back({"GIF offset frame, local table, transparent", test::encode_gif(10, 8, global, {f}),
                   gif_expected(10, 8, f.local_colors, 5, f)});
  }
  {  // the same without transparency: the rest is index 0 of the frame's table
    auto f = gif_frame_of(2, 3, 5, 4, 8);
    f.local_colors = colors(8, 40);
    out.push_back({"GIF offset frame, no transparency", test::encode_gif(10, 8, global, {f}),
                   gif_expected(10, 8, f.local_colors, 0, f)});
  }
  {  // interlaced
    auto f = gif_frame_of(0, 0, 7, 19, 4);
    f.interlaced = true;
    out.push_back(
        {"GIF interlaced", test::encode_gif(7, 19, global, {f}), gif_expected(7, 19, global, 0, f)});
  }
  {  // two frames: only the first is drawn
    const auto first = gif_frame_of(0, 0, 6, 5, 4);
    auto second = gif_frame_of(1, 1, 3, 3, 4);
    second.indices.assign(9, 3);
    out.push_back({"GIF, two frames", test::encode_gif(6, 5, global, {first, second}),
                   gif_expected(6, 5, global, 0, first)});
  }
  {  // a frame reaching past the logical screen grows the canvas
    const auto f = gif_frame_of(2, 2, 5, 3, 4);
    out.push_back(
        {"GIF frame past the screen", test::encode_gif(4, 4, global, {f}), gif_expected(7, 5, global, 0, f)});
  }
  {  // indices past a 2-colour table: grey (i, i, i); a transparent index past it too
    const bytes indices = {0, 1, 2, 3, 3, 2, 1, 0};
    bytes expected;
    for (int i : indices) {
      for (int c = 0; c < 3; ++c)
        expected.push_back(static_cast<std::uint8_t>(i == 3 ? 255 : i < 2 ? 37 * i + 11 * c : i));
    }
    out.push_back(
        {"GIF indices past the table", test::handmade_gif(4, 2, 1, indices, 3), image_of(4, 2, expected)});
  }
  {  // no colour table at all: grey (i, i, i)
    const bytes indices = {0, 1, 2, 3, 1, 1};
    bytes expected;
    for (int i : indices)
      for (int c = 0; c < 3; ++c) expected.push_back(static_cast<std::uint8_t>(i));
    out.push_back(
        {"GIF without a colour table", test::handmade_gif(3, 2, 0, indices), image_of(3, 2, expected)});
  }
  return out;
}

// ---- WebP and JPEG fixtures ---------------------------------------------------------------------

std::vector<fixture> webp_lossless_fixtures() {
  const bytes rgb = pattern_pixels(17, 9, 3);
  bytes rgba = pattern_pixels(17, 9, 4);
  bytes composited;
  for (std::size_t p = 0; p < rgba.size(); p += 4)
    for (int c = 0; c < 3; ++c) composited.push_back(composite(rgba[p + c], rgba[p + 3]));
  return {{"WebP lossless RGB", test::encode_webp(rgb, 17, 9, 3, test::webp_kind::lossless),
           image_of(17, 9, rgb)},
          {"WebP lossless RGBA", test::encode_webp(rgba, 17, 9, 4, test::webp_kind::lossless),
           image_of(17, 9, composited)}};
}

std::vector<fixture> lossy_fixtures() {
  const bytes rgb = pattern_pixels(37, 23, 3);
  bytes gray, cmyk;
  for (std::size_t p = 0; p < rgb.size(); p += 3) {
    gray.push_back(rgb[p]);
    for (int c = 0; c < 3; ++c) cmyk.push_back(static_cast<std::uint8_t>(255 - rgb[p + c]));
    cmyk.push_back(static_cast<std::uint8_t>(rgb[p + 1] / 3));
  }
  return {
      {"JPEG 4:4:4", test::encode_jpeg(rgb, 37, 23, TJPF_RGB, TJSAMP_444), {}},
      {"JPEG 4:2:2", test::encode_jpeg(rgb, 37, 23, TJPF_RGB, TJSAMP_422), {}},
      {"JPEG 4:2:0", test::encode_jpeg(rgb, 37, 23, TJPF_RGB, TJSAMP_420), {}},
      {"JPEG 4:2:0 progressive",
       test::encode_jpeg(rgb, 37, 23, TJPF_RGB, TJSAMP_420, TJFLAG_PROGRESSIVE),
       {}},
      {"JPEG grey", test::encode_jpeg(gray, 37, 23, TJPF_GRAY, TJSAMP_GRAY), {}},
      {"JPEG CMYK (YCCK)", test::encode_jpeg(cmyk, 37, 23, TJPF_CMYK, TJSAMP_444), {}},
      {"WebP lossy RGB", test::encode_webp(rgb, 37, 23, 3, test::webp_kind::lossy), {}},
      {"WebP lossy RGBA",
       test::encode_webp(pattern_pixels(37, 23, 4), 37, 23, 4, test::webp_kind::lossy),
       {}},
  };
}

}  // namespace

TEST_CASE("decode_image: lossless PNGs give the pixels written, composited over white, as Pillow does",
          "[image]") {
  check_fixtures({png_rgb8(),
                  png_rgba8_every_pair(),
                  png_gray(1),
                  png_gray(2),
                  png_gray(4),
                  png_gray(8),
                  png_gray16(),
                  png_gray_key(8, 77),
                  png_gray_key(1, 0),
                  png_gray_key(1, 1),
                  png_gray_key(2, 0),
                  png_gray_key(2, 2),
                  png_gray16(300),
                  png_gray_alpha(8),
                  png_gray_alpha(16),
                  png_rgba16(),
                  png_rgb16_gamma(),
                  png_palette(8, 200, 37, 199),
                  png_palette(8, 2, 1, 255),
                  png_palette(4, 11, 11, 15),
                  png_palette(2, 4, 0, 3),
                  png_palette(1, 2, 2, 1),
                  png_rgb_key(),
                  png_rgba_interlaced()});
}

TEST_CASE("decode_image: a GIF's first frame on its canvas, as Pillow draws it", "[image]") {
  check_fixtures(gif_fixtures());
}

TEST_CASE("decode_image: lossless WebP gives the pixels written, composited over white", "[image]") {
  check_fixtures(webp_lossless_fixtures());
}

TEST_CASE("decode_image: JPEG and lossy WebP match Pillow exactly", "[image]") {
  const std::vector<fixture> fixtures = lossy_fixtures();
  // Without Pillow, at least the decode is close to what was encoded.
  const bytes rgb = pattern_pixels(37, 23, 3);
  for (const fixture& f : fixtures) {
    INFO(f.name);
    const rgb_image decoded = must_decode(f.file);
    CHECK(decoded.width == 37);
    CHECK(decoded.height == 23);
    if (f.name == "JPEG 4:4:4" || f.name == "JPEG 4:2:0" || f.name == "WebP lossy RGB") {
      CHECK(mean_difference(decoded, image_of(37, 23, rgb)) < 12);
    }
  }
  check_fixtures(fixtures);
}
