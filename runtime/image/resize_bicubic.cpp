#include "runtime/image/resize_bicubic.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <vector>

namespace anchorage {

namespace {

constexpr int precision_bits = 32 - 8 - 2;  // two bits of headroom for the negative lobes

// Keys' cubic convolution kernel with a = -0.5, support 2, written as Pillow evaluates it.
double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// The taps of every output index along one side: output i reads inputs first[i] ..
// first[i] + count[i] - 1 with weights[i * ksize ...], in 8-bit fixed point.
struct side_taps {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<std::int32_t> weights;
};

side_taps taps_for(int in_size, int out_size) {
  constexpr double support_unscaled = 2.0;
  // Pillow's box is (0, 0, in_w, in_h) as floats: scale = (double)(in1 - in0) / out.
  const float in0 = 0.0f;
  const float in1 = static_cast<float>(in_size);
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = support_unscaled * filterscale;
  side_taps t;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<std::size_t>(out_size));
  t.count.resize(static_cast<std::size_t>(out_size));
  t.weights.assign(static_cast<std::size_t>(out_size) * static_cast<std::size_t>(t.ksize), 0);
  std::vector<double> k(static_cast<std::size_t>(t.ksize));
  for (int i = 0; i < out_size; ++i) {
    const double center = in0 + (i + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);  // truncation, as Pillow's cast
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double w = bicubic((x + xmin - center + 0.5) * ss);
      k[static_cast<std::size_t>(x)] = w;
      ww += w;
    }
    std::int32_t* out = &t.weights[static_cast<std::size_t>(i) * static_cast<std::size_t>(t.ksize)];
    for (int x = 0; x < xmax; ++x) {
      double w = k[static_cast<std::size_t>(x)];
      if (ww != 0.0) w /= ww;
      const double fixed = w * (1 << precision_bits);
      out[x] = static_cast<std::int32_t>(w < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    t.first[static_cast<std::size_t>(i)] = xmin;
    t.count[static_cast<std::size_t>(i)] = xmax;
  }
  return t;
}

// Pillow's clip8: the sum shifted down (arithmetic shift, flooring), clamped to 0..255.
std::uint8_t clip8(std::int32_t sum) {
  const std::int32_t v = sum >> precision_bits;
  return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// One weighted sum of `n` samples `stride` bytes apart, per channel.
void blend(const std::uint8_t* src, std::size_t stride, const std::int32_t* k, int n, std::uint8_t* dst) {
  std::int32_t s0 = 1 << (precision_bits - 1);
  std::int32_t s1 = s0;
  std::int32_t s2 = s0;
  for (int j = 0; j < n; ++j) {
    const std::uint8_t* px = src + static_cast<std::size_t>(j) * stride;
    s0 += px[0] * k[j];
    s1 += px[1] * k[j];
    s2 += px[2] * k[j];
  }
  dst[0] = clip8(s0);
  dst[1] = clip8(s1);
  dst[2] = clip8(s2);
}

}  // namespace

rgb_image resize_bicubic(const rgb_image& in, std::uint32_t out_height, std::uint32_t out_width) {
  assert(in.width > 0 && in.height > 0 && out_width > 0 && out_height > 0);
  assert(in.rgb.size() == std::size_t{in.width} * in.height * 3);
  const int in_w = static_cast<int>(in.width);
  const int in_h = static_cast<int>(in.height);
  const int out_w = static_cast<int>(out_width);
  const int out_h = static_cast<int>(out_height);
  const bool need_horizontal = out_w != in_w;
  const bool need_vertical = out_h != in_h;
  if (!need_horizontal && !need_vertical) return in;

  side_taps vert = taps_for(in_h, out_h);
  // The source rows the vertical pass reads: the horizontal pass makes only those.
  const int row_first = vert.first.front();
  const int row_end = vert.first.back() + vert.count.back();

  const std::uint8_t* src = in.rgb.data();
  int src_w = in_w;
  rgb_image horizontal;
  if (need_horizontal) {
    const side_taps hor = taps_for(in_w, out_w);
    horizontal.width = out_width;
    horizontal.height = static_cast<std::uint32_t>(row_end - row_first);
    horizontal.rgb.resize(std::size_t{horizontal.width} * horizontal.height * 3);
    for (int y = 0; y < row_end - row_first; ++y) {
      const std::uint8_t* row = in.rgb.data() + static_cast<std::size_t>(y + row_first) * in.width * 3;
      std::uint8_t* dst = horizontal.rgb.data() + static_cast<std::size_t>(y) * horizontal.width * 3;
      for (int x = 0; x < out_w; ++x) {
        const std::size_t at = static_cast<std::size_t>(x);
        blend(row + static_cast<std::size_t>(hor.first[at]) * 3, 3,
              &hor.weights[at * static_cast<std::size_t>(hor.ksize)], hor.count[at], dst + at * 3);
      }
    }
    for (int& first : vert.first) first -= row_first;
    src = horizontal.rgb.data();
    src_w = out_w;
    if (!need_vertical) return horizontal;  // row_first = 0 and row_end = in_h: every row
  }

  rgb_image out;
  out.width = static_cast<std::uint32_t>(src_w);
  out.height = out_height;
  out.rgb.resize(std::size_t{out.width} * out.height * 3);
  const std::size_t stride = static_cast<std::size_t>(src_w) * 3;
  for (int y = 0; y < out_h; ++y) {
    const std::size_t at = static_cast<std::size_t>(y);
    const std::uint8_t* top = src + static_cast<std::size_t>(vert.first[at]) * stride;
    const std::int32_t* k = &vert.weights[at * static_cast<std::size_t>(vert.ksize)];
    std::uint8_t* dst = out.rgb.data() + at * stride;
    for (int x = 0; x < src_w; ++x) {
      blend(top + static_cast<std::size_t>(x) * 3, stride, k, vert.count[at],
            dst + static_cast<std::size_t>(x) * 3);
    }
  }
  return out;
}

}  // namespace anchorage
