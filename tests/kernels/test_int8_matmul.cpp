// cpu::int8_matmul and cpu::quantize_activations (kernels/int8_matmul.hpp): the activations'
// rounding as stated; each output the contract's order on exact integer sums (the vector form and
// the plain one bit for bit, any split of rows bit for bit); against a double-precision product
// of the dequantized weights and the rounded activations (which catches a weight unpacked wrong:
// a nibble, a scale, a min or Q8_0's offset); against the float activations within the rounding
// of 8 bits; only y's rows written.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/dequantize.hpp"
#include "kernels/int8_matmul.hpp"
#include "kernels/quantize.hpp"
#include "kernels/weight_type.hpp"
#include "tests/support/quant_tolerance.hpp"

using namespace anchorage::kernels;
using anchorage::testing::stored_rows;

namespace {

constexpr weight_type int8_types[] = {weight_type::q8_0, weight_type::q4_0, weight_type::q4_k,
                                      weight_type::q5_k, weight_type::q6_k};
constexpr float sentinel = -12345.5f;

// m rows of k activations, ldx apart: normal values, a row of zeros, a block with one outlier.
std::vector<float> activations(int m, int k, int ldx, std::uint64_t seed) {
  std::vector<float> x(static_cast<std::size_t>(m) * static_cast<std::size_t>(ldx), 1e30f);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < k; ++j) x[static_cast<std::size_t>(i) * ldx + j] = i == 2 ? 0.0f : d(rng);
  if (m > 4) x[static_cast<std::size_t>(4) * ldx + 5] = 300.0f;
  return x;
}

}  // namespace

TEST_CASE(
    "activations are rounded per block of 32 as Q8_0: d = max|x| / 127, q rounded half away from "
    "zero, the scale kept as a half",
    "[int8][kernels]") {
  std::vector<float> x(64);
  for (int e = 0; e < 32; ++e)
    x[static_cast<std::size_t>(e)] = static_cast<float>(e) - 16.5f;  // max |x| 16.5
  x[31] = -127.0f;  // block 0: d = 1 exactly, so q = round(x)
  // block 1 stays zero: d = 0, every q 0
  cpu::q8_activations q;
  cpu::quantize_activations(1, 64, x.data(), 64, q);
  REQUIRE(q.m == 1);
  REQUIRE(q.k == 64);
  REQUIRE(q.d.size() == 2);
  CHECK(q.d[0] == 1.0f);
  CHECK(q.q[0] == -17);  // -16.5 away from zero
  CHECK(q.q[1] == -16);  // -15.5
  CHECK(q.q[17] == 1);   // 0.5
  CHECK(q.q[31] == -127);
  std::int32_t sum = 0;
  for (int e = 0; e < 32; ++e) sum += q.q[static_cast<std::size_t>(e)];
  CHECK(q.c[0] == static_cast<float>(sum));
  REQUIRE(q.s.size() == 4);  // each 16 values' sum of q, exact
  std::int32_t low = 0;
  for (int e = 0; e < 16; ++e) low += q.q[static_cast<std::size_t>(e)];
  CHECK(q.s[0] == low);
  CHECK(q.s[1] == sum - low);
  CHECK(q.s[2] == 0);
  CHECK(q.s[3] == 0);
  CHECK(q.d[1] == 0.0f);
  CHECK(q.c[1] == 0.0f);
  // A scale a half cannot hold is kept rounded to one, and the values are rounded with the
  // unrounded scale (as llama.cpp's quantizer does): 1.1 / 127 has more bits than a half's 11.
  std::vector<float> y(32, 0.0f);
  y[0] = 1.1f;
  y[1] = 0.55f;
  cpu::quantize_activations(1, 32, y.data(), 32, q);
  CHECK(q.d[0] == f16_to_f32(f32_to_f16(1.1f / 127.0f)));
  CHECK(q.d[0] != 1.1f / 127.0f);
  CHECK(q.q[0] == 127);
  CHECK(q.q[1] == static_cast<std::int8_t>(std::round(0.55f * (1.0f / (1.1f / 127.0f)))));
  CHECK(q.c[0] == q.d[0] * static_cast<float>(q.q[0] + q.q[1]));
  for (int e = 32; e < 64; ++e) CHECK(q.q[static_cast<std::size_t>(e)] == 0);

  // Each row from its own values alone, ldx honoured.
  const std::vector<float> many = activations(5, 96, 100, 3);
  cpu::q8_activations all, one;
  cpu::quantize_activations(5, 96, many.data(), 100, all);
  cpu::quantize_activations(1, 96, many.data() + 300, 100, one);
  CHECK(std::memcmp(all.q.data() + 3 * 96, one.q.data(), 96) == 0);
  CHECK(std::memcmp(all.d.data() + 3 * 3, one.d.data(), 3 * sizeof(float)) == 0);
}

TEST_CASE("activations: the vector rounding gives the plain loop's bits, ties, NaN and infinities included",
          "[int8][kernels]") {
  // Blocks built to reach every branch: ties (x * id exactly n + 0.5, both signs), values a ulp
  // either side of a tie, zeros and -0, a NaN, infinities, a huge value beside tiny ones,
  // subnormals, then plain normals at several scales.
  const int k = 32 * 12, m = 7;
  std::vector<float> x(static_cast<std::size_t>(m) * k);
  std::mt19937_64 rng(91);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::size_t j = 0; j < x.size(); ++j)
    x[j] = nd(rng) * std::pow(10.0f, static_cast<float>(j % 7) - 3.0f);
  float* b = x.data();
  for (int e = 0; e < 32; ++e) b[e] = static_cast<float>(e - 16) + 0.5f;  // block 0: max 15.5 ... ties
  b[0] = -127.0f;                                                         // d = 1: x * id = x
  for (int e = 0; e < 32; ++e)
    b[32 + e] = std::nextafter(static_cast<float>(e - 16) + 0.5f, e % 2 ? 100.0f : -100.0f);
  b[32] = -127.0f;
  for (int e = 0; e < 32; ++e) b[64 + e] = e % 3 == 0 ? -0.0f : 0.0f;  // block 2: all zero
  b[96 + 3] = std::nanf("");                                           // block 3: a NaN among normals
  b[128 + 7] = std::numeric_limits<float>::infinity();                 // block 4: +inf
  b[160 + 9] = -std::numeric_limits<float>::infinity();                // block 5: -inf
  b[192 + 1] = 3e38f;                                                  // block 6: huge beside tiny
  for (int e = 0; e < 32; ++e) b[224 + e] = std::numeric_limits<float>::denorm_min() * static_cast<float>(e);
  cpu::q8_activations vec, plain, parts;
  cpu::quantize_activations(m, k, x.data(), k, vec);
  cpu::quantize_activations(m, k, x.data(), k, plain, true);
  REQUIRE(vec.q == plain.q);
  CHECK(std::memcmp(vec.d.data(), plain.d.data(), vec.d.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(vec.c.data(), plain.c.data(), vec.c.size() * sizeof(float)) == 0);
  CHECK(vec.s == plain.s);
  for (std::size_t h = 0; h < vec.s.size(); ++h) {
    std::int32_t sum = 0;
    for (std::size_t e = 16 * h; e < 16 * h + 16; ++e) sum += vec.q[e];
    CHECK(vec.s[h] == sum);
  }
  // The ties went away from zero: d = 1 in block 0, so q = round(x).
  CHECK(vec.q[1] == -15);     // -14.5
  CHECK(vec.q[17] == 2);      // 1.5
  CHECK(vec.q[16] == 1);      // 0.5
  CHECK(vec.q[15] == -1);     // -0.5
  CHECK(vec.q[96 + 3] == 0);  // the NaN
  CHECK(vec.d[4] == std::numeric_limits<float>::infinity());
  for (int e = 0; e < 32; ++e) CHECK(vec.q[static_cast<std::size_t>(128 + e)] == 0);  // inf * 0 and x * 0
  // Any split of the rows gives the same bits.
  cpu::size_activations(m, k, parts);
  cpu::quantize_rows(0, 3, x.data(), k, parts);
  cpu::quantize_rows(3, m, x.data(), k, parts);
  CHECK(parts.q == vec.q);
  CHECK(std::memcmp(parts.c.data(), vec.c.data(), vec.c.size() * sizeof(float)) == 0);
  CHECK(parts.s == vec.s);
}

TEST_CASE(
    "int8_matmul: the stated order on exact sums, the same bits in both forms and any split, "
    "the dequantized product of the rounded activations",
    "[int8][kernels]") {
  for (weight_type t : int8_types) {
    CHECK(cpu::int8_reads(t));
    for (int k : {256, 768}) {
      for (int m : {1, 2, 3, 4, 5, 8, 12, 13, 33}) {
        for (int n : {1, 15, 16, 17, 40}) {
          INFO(weight_type_name(t) << " k " << k << " m " << m << " n " << n);
          const std::vector<std::uint8_t> w = stored_rows(t, n, k, 11 + static_cast<std::uint64_t>(n));
          const int ldx = k + 3, ldy = n + 5;
          const std::vector<float> x = activations(m, k, ldx, 7 + static_cast<std::uint64_t>(m));
          cpu::q8_activations q;
          cpu::quantize_activations(m, k, x.data(), ldx, q);

          std::vector<float> y(static_cast<std::size_t>(m) * ldy, sentinel), plain(y);
          cpu::int8_matmul(t, q, n, w.data(), y.data(), ldy);
          cpu::int8_matmul(t, q, n, w.data(), plain.data(), ldy, true);
          for (int i = 0; i < m; ++i)
            for (int r = n; r < ldy; ++r) {  // only y's rows written
              CHECK(y[static_cast<std::size_t>(i) * ldy + r] == sentinel);
              CHECK(plain[static_cast<std::size_t>(i) * ldy + r] == sentinel);
            }
          CHECK(std::memcmp(y.data(), plain.data(), y.size() * sizeof(float)) == 0);

          // Weight rows split in two at an odd place: the same bits.
          if (n > 1) {
            const auto rb = static_cast<std::size_t>(*row_bytes(t, k));
            const int cut = n / 2 + 1;
            std::vector<float> split(y.size(), sentinel);
            cpu::int8_matmul(t, q, cut, w.data(), split.data(), ldy);
            cpu::int8_matmul(t, q, n - cut, w.data() + rb * static_cast<std::size_t>(cut), split.data() + cut,
                             ldy);
            CHECK(std::memcmp(y.data(), split.data(), y.size() * sizeof(float)) == 0);
          }

          // Against doubles: sum over j of the dequantized weight times d_g * q_j. The integer
          // sums are exact, so only the float steps round, 2 per block: within a few ulps of the
          // magnitudes summed (|A u| is at most |w| plus twice the block's largest |w|, and a
          // K type's min term is dot_magnitude's). A weight byte or a block's scale, min or
          // offset unpacked wrong moves an output by a weight times an activation, over 1e-3 of
          // the magnitude at these lengths, far above this.
          std::vector<float> wf(static_cast<std::size_t>(k)), xv(static_cast<std::size_t>(k));
          const auto rb = static_cast<std::size_t>(*row_bytes(t, k));
          for (int r = 0; r < n; ++r) {
            const std::uint8_t* row = w.data() + rb * static_cast<std::size_t>(r);
            dequantize_row(t, row, wf.data(), k);
            for (int i = 0; i < m; ++i) {
              double exact = 0, fexact = 0, rounding = 0, big = 0;
              for (int j = 0; j < k; ++j) {
                const double dq = q.d[static_cast<std::size_t>(i) * (k / 32) + j / 32];
                xv[static_cast<std::size_t>(j)] =
                    static_cast<float>(dq * q.q[static_cast<std::size_t>(i) * k + j]);
                exact +=
                    wf[static_cast<std::size_t>(j)] * static_cast<double>(xv[static_cast<std::size_t>(j)]);
                fexact += static_cast<double>(wf[static_cast<std::size_t>(j)]) *
                          x[static_cast<std::size_t>(i) * ldx + j];
                rounding += std::fabs(wf[static_cast<std::size_t>(j)]) * dq * 0.5;
                double block_max = 0;
                for (int e = j / 32 * 32; e < j / 32 * 32 + 32; ++e)
                  block_max =
                      std::max(block_max, std::fabs(static_cast<double>(wf[static_cast<std::size_t>(e)])));
                big += 2 * block_max * std::fabs(xv[static_cast<std::size_t>(j)]);
              }
              const double mag = anchorage::testing::dot_magnitude(t, row, wf.data(), xv.data(), k) + big;
              const float got = y[static_cast<std::size_t>(i) * ldy + r];
              CHECK(std::fabs(got - exact) <= 4e-6 * mag + 1e-30);
              // and the float activations' product within the 8-bit rounding (half a step a value)
              CHECK(std::fabs(got - fexact) <= rounding * 1.0001 + 4e-6 * mag + 1e-30);
            }
          }
        }
      }
    }
  }
  CHECK_FALSE(cpu::int8_reads(weight_type::f32));
  CHECK_FALSE(cpu::int8_reads(weight_type::f16));
  CHECK_FALSE(cpu::int8_reads(weight_type::bf16));
}

TEST_CASE("int8_matmul: each Q6_K scale goes with its own 16 values in every form", "[int8][kernels]") {
  // Q6_K super-blocks whose 16 scales all differ (in size and sign, so any two swapped change an
  // output by a factor of at least 1 + 2/33), multiplied by activation rows each nonzero in one
  // 16-value half only: row j of each 16 touches scale j alone. A scale paired with the wrong
  // 16 values (within a block of 32 or across blocks) moves the output far off the dequantized
  // product. m = 1 and 4 take the few-rows form, 16 and 48 the panel form; plain forced too.
  const int k = 512, n = 19;  // two super-blocks; a full panel and a short one
  const auto rb = static_cast<std::size_t>(*row_bytes(weight_type::q6_k, k));
  std::vector<std::uint8_t> w(rb * n);
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < k / 256; ++b) {
      std::uint8_t* blk = w.data() + rb * static_cast<std::size_t>(r) + 210 * static_cast<std::size_t>(b);
      for (int e = 0; e < 192; ++e) blk[e] = static_cast<std::uint8_t>(byte(rng));
      for (int j = 0; j < 16; ++j) {  // 3, -5, 7, -9, ... 33, -35 (rotated by row and block)
        const int at = (j + r + 5 * b) % 16;
        blk[192 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>((at % 2 ? -1 : 1) * (3 + 2 * at)));
      }
      const std::uint16_t d = f32_to_f16(0.001f * static_cast<float>(1 + r % 3));
      blk[208] = static_cast<std::uint8_t>(d & 0xff);
      blk[209] = static_cast<std::uint8_t>(d >> 8);
    }
  for (int m : {1, 4, 16, 48}) {
    // row i nonzero in half i % (k / 16) only
    std::vector<float> x(static_cast<std::size_t>(m) * k, 0.0f);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int i = 0; i < m; ++i) {
      const int h = (i * 7) % (k / 16);
      for (int e = 0; e < 16; ++e) x[static_cast<std::size_t>(i) * k + 16 * h + e] = nd(rng) + 0.25f;
    }
    cpu::q8_activations q;
    cpu::quantize_activations(m, k, x.data(), k, q);
    for (bool plain : {false, true}) {
      std::vector<float> y(static_cast<std::size_t>(m) * n, sentinel);
      cpu::int8_matmul(weight_type::q6_k, q, n, w.data(), y.data(), n, plain);
      std::vector<float> wf(static_cast<std::size_t>(k));
      for (int r = 0; r < n; ++r) {
        dequantize_row(weight_type::q6_k, w.data() + rb * static_cast<std::size_t>(r), wf.data(), k);
        for (int i = 0; i < m; ++i) {
          INFO("m " << m << " plain " << plain << " row " << r << " activation row " << i);
          double exact = 0, mag = 0;
          for (int j = 0; j < k; ++j) {
            const double xv = static_cast<double>(q.d[static_cast<std::size_t>(i) * (k / 32) + j / 32]) *
                              q.q[static_cast<std::size_t>(i) * k + j];
            exact += wf[static_cast<std::size_t>(j)] * xv;
            mag += std::fabs(wf[static_cast<std::size_t>(j)] * xv);
          }
          REQUIRE(mag > 0);
          CHECK(std::fabs(y[static_cast<std::size_t>(i) * n + r] - exact) <= 1e-6 * mag);
        }
      }
    }
  }
}

TEST_CASE("int8_matmul's vector form runs on a CPU with AVX-512 VNNI", "[int8][kernels]") {
  // The bit-equality above compares the two forms only where the vector one runs; say which.
  if (!cpu::int8_vectors()) WARN("this CPU has no AVX-512 VNNI: int8_matmul ran its plain form only");
  const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
  CHECK(cpu::int8_vectors() == vnni);
}
