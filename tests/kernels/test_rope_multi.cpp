// The M-RoPE kernel (kernels/rope_multi.hpp): rows whose three positions agree get rope's exact
// bits, and an image row's height and width positions reach exactly the frequency pairs
// transformers' apply_interleaved_mrope gives them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ops.hpp"
#include "tests/support/random_floats.hpp"

using namespace anchorage::kernels;
using anchorage::testing::random_floats;

namespace {

// Qwen3.5's layout: head_dim 256, 64 rotary dims (32 pairs), sections [11, 11, 10].
constexpr int heads = 2, head_dim = 256, rot = 64, stride = heads * head_dim + 3;
constexpr int sections[3] = {11, 11, 10};
constexpr float base = 1e7f;

}  // namespace

TEST_CASE("rope_multi with equal positions is rope, bit for bit", "[kernels][mrope]") {
  const int rows = 5, pos0 = 1234;
  const auto x = random_floats(static_cast<std::size_t>(rows) * stride, 7);
  auto a = x, b = x;
  cpu::rope(a.data(), stride, rows, heads, head_dim, rot, pos0, base);
  std::vector<int> pos;
  for (int r = 0; r < rows; ++r) pos.insert(pos.end(), {pos0 + r, pos0 + r, pos0 + r});
  cpu::rope_multi(b.data(), stride, rows, heads, head_dim, rot, pos.data(), sections, base);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("rope_multi gives each frequency pair the axis apply_interleaved_mrope does", "[kernels][mrope]") {
  // transformers: freqs_t[..., 1:33:3] = freqs_h, freqs_t[..., 2:30:3] = freqs_w, the rest T.
  std::vector<int> axis(32, 0);
  for (int i = 1; i < 3 * sections[1]; i += 3) axis[i] = 1;
  for (int i = 2; i < 3 * sections[2]; i += 3) axis[i] = 2;
  for (int i = 0; i < 32; ++i) CHECK(rope_multi_axis(i, sections) == axis[i]);
  CHECK(axis[31] == 1);  // 31 = 1 mod 3 and below 33
  CHECK(axis[30] == 0);
  CHECK(axis[29] == 2);

  // One image row at (t, h, w) = (40, 43, 47): each pair is rope at its axis' position.
  const int t = 40, h = 43, w = 47;
  const auto x = random_floats(stride, 11);
  auto got = x;
  const int p[3] = {t, h, w};
  cpu::rope_multi(got.data(), stride, 1, heads, head_dim, rot, p, sections, base);
  const int at[3] = {t, h, w};
  for (int a = 0; a < 3; ++a) {
    auto want = x;
    cpu::rope(want.data(), stride, 1, heads, head_dim, rot, at[a], base);
    for (int hh = 0; hh < heads; ++hh)
      for (int i = 0; i < rot / 2; ++i) {
        if (axis[i] != a) continue;
        const int o = hh * head_dim;
        CHECK(got[o + i] == want[o + i]);
        CHECK(got[o + i + rot / 2] == want[o + i + rot / 2]);
      }
  }
  // the dimensions past the rotary ones pass through
  for (int i = rot; i < head_dim; ++i) CHECK(got[i] == x[i]);
}
