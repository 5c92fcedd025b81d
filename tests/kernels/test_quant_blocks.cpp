// The weight types kept as GGUF stores them (kernels/weight_type.hpp): the type table, the block
// decoders against blocks built by hand from the format's prose, the quantizers' round trip and
// llama.cpp's reference quantizers, quant_matvec against a double-precision dot product, and the
// 16-bit float conversions bit by bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/dequantize.hpp"
#include "kernels/quant_matvec.hpp"
#include "kernels/quantize.hpp"
#include "kernels/weight_type.hpp"
#include "runtime/model/half_float.hpp"
#include "tests/support/quant_tolerance.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace anchorage::kernels;
using anchorage::testing::dot_magnitude;

namespace {

constexpr weight_type all_types[] = {weight_type::f32,  weight_type::f16,  weight_type::bf16,
                                     weight_type::q8_0, weight_type::q4_0, weight_type::q4_k,
                                     weight_type::q5_k, weight_type::q6_k};
constexpr weight_type block_types[] = {weight_type::q8_0, weight_type::q4_0, weight_type::q4_k,
                                       weight_type::q5_k, weight_type::q6_k};

float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<std::uint8_t> stored(weight_type t, const std::vector<float>& x) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(*row_bytes(t, static_cast<std::int64_t>(x.size()))));
  quantize_row(t, x.data(), out.data(), static_cast<int>(x.size()));
  return out;
}

std::vector<float> values(weight_type t, const std::uint8_t* src, int n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  dequantize_row(t, src, out.data(), n);
  return out;
}

// A half close to `v` (the test's fields only need to be exact halves, not the nearest one).
std::uint16_t half_of(float v) { return anchorage::float_to_f16(v); }
float half_value(float v) { return anchorage::f16_to_float(half_of(v)); }

void put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}

// A hand-built block and the values the format's prose says it holds.
struct hand_block {
  std::vector<std::uint8_t> bytes;
  std::vector<double> want;
};

// Q8_0: d, then 32 int8; value i = d * qs[i].
hand_block q8_0_by_hand() {
  hand_block b{std::vector<std::uint8_t>(34), std::vector<double>(32)};
  put16(b.bytes.data(), half_of(0.0371f));
  for (int i = 0; i < 32; ++i) {
    const int q = (i * 37) % 255 - 127;
    b.bytes[static_cast<std::size_t>(2 + i)] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
    b.want[static_cast<std::size_t>(i)] = static_cast<double>(half_value(0.0371f)) * q;
  }
  return b;
}

// Q4_0: d, then 16 bytes; value e < 16 is the low nibble of byte e, value e >= 16 the high nibble
// of byte e - 16; value = d * (nibble - 8).
hand_block q4_0_by_hand() {
  hand_block b{std::vector<std::uint8_t>(18, 0), std::vector<double>(32)};
  put16(b.bytes.data(), half_of(-0.29f));
  for (int e = 0; e < 32; ++e) {
    const int q = (e * 7 + 3 + e / 16 * 5) % 16;  // values e and e + 16 differ
    std::uint8_t& byte = b.bytes[static_cast<std::size_t>(2 + e % 16)];
    byte = static_cast<std::uint8_t>(byte | (e < 16 ? q : q << 4));
    b.want[static_cast<std::size_t>(e)] = static_cast<double>(half_value(-0.29f)) * (q - 8);
  }
  return b;
}

// The Q4_K/Q5_K scale bytes written from the byte-by-byte description: bytes 0-3 hold sc0..3 in
// their low 6 bits and bits 4-5 of sc4..7 on top; bytes 4-7 the same for the mins; bytes 8-11
// bits 0-3 of sc4..7 (low nibble) and of m4..7 (high nibble).
void pack_k_scales(const int* sc, const int* m, std::uint8_t* q) {
  for (int i = 0; i < 4; ++i) {
    q[i] = static_cast<std::uint8_t>(sc[i] | ((sc[i + 4] >> 4) << 6));
    q[i + 4] = static_cast<std::uint8_t>(m[i] | ((m[i + 4] >> 4) << 6));
    q[i + 8] = static_cast<std::uint8_t>((sc[i + 4] & 15) | ((m[i + 4] & 15) << 4));
  }
}

// Eight scales and eight mins, all different, four of each needing their top two bits.
constexpr int k_sc[8] = {5, 63, 17, 40, 49, 22, 33, 60};
constexpr int k_m[8] = {61, 3, 44, 28, 19, 52, 7, 36};

// Q4_K (Q5_K with `five`): value e is in sub-block e / 32 and chunk e / 64; its 4 bits are
// the low nibble of qs[32 (e / 64) + e % 32] when e % 64 < 32, else the high nibble; Q5_K's
// fifth bit is bit e / 32 of qh[e % 32]. value = d * sc * q - dmin * m.
hand_block k_by_hand(bool five) {
  const int size = five ? 176 : 144;
  hand_block b{std::vector<std::uint8_t>(static_cast<std::size_t>(size), 0), std::vector<double>(256)};
  const float d = 0.0123f, dmin = 0.00731f;
  put16(b.bytes.data(), half_of(d));
  put16(b.bytes.data() + 2, half_of(dmin));
  pack_k_scales(k_sc, k_m, b.bytes.data() + 4);
  std::uint8_t* qh = five ? b.bytes.data() + 16 : nullptr;
  std::uint8_t* qs = b.bytes.data() + (five ? 48 : 16);
  std::mt19937 rng(11);
  for (int e = 0; e < 256; ++e) {
    const int q = static_cast<int>(rng() % (five ? 32 : 16));
    std::uint8_t& byte = qs[32 * (e / 64) + e % 32];
    byte = static_cast<std::uint8_t>(byte | (e % 64 < 32 ? (q & 15) : (q & 15) << 4));
    if (five && q >= 16) qh[e % 32] = static_cast<std::uint8_t>(qh[e % 32] | (1 << (e / 32)));
    const int s = e / 32;
    b.want[static_cast<std::size_t>(e)] =
        static_cast<double>(half_value(d)) * k_sc[s] * q - static_cast<double>(half_value(dmin)) * k_m[s];
  }
  return b;
}

// Q6_K: ql[128], qh[64], scales[16], d. Value e: half h = e / 128, r = e % 128, quarter t = r / 32,
// l = r % 32; low 4 bits from ql[64h + 32 (t % 2) + l] (low nibble for t < 2, high for t >= 2),
// top 2 bits from bits 2t, 2t+1 of qh[32h + l]; value = d * scales[e / 16] * (q - 32).
hand_block q6_k_by_hand() {
  hand_block b{std::vector<std::uint8_t>(210, 0), std::vector<double>(256)};
  const int scales[16] = {-128, 127, -3, 45, 17, -61, 99, 1, -100, 73, 8, -19, 120, -77, 33, 64};
  for (int i = 0; i < 16; ++i)
    b.bytes[static_cast<std::size_t>(192 + i)] = static_cast<std::uint8_t>(scales[i]);
  const float d = 0.00177f;
  put16(b.bytes.data() + 208, half_of(d));
  std::mt19937 rng(12);
  for (int e = 0; e < 256; ++e) {
    const int q = static_cast<int>(rng() % 64);
    const int h = e / 128, t = (e % 128) / 32, l = e % 32;
    std::uint8_t& low = b.bytes[static_cast<std::size_t>(64 * h + 32 * (t % 2) + l)];
    low = static_cast<std::uint8_t>(low | (t < 2 ? (q & 15) : (q & 15) << 4));
    std::uint8_t& high = b.bytes[static_cast<std::size_t>(128 + 32 * h + l)];
    high = static_cast<std::uint8_t>(high | ((q >> 4) << (2 * t)));
    b.want[static_cast<std::size_t>(e)] = static_cast<double>(half_value(d)) * scales[e / 16] * (q - 32);
  }
  return b;
}

hand_block by_hand(weight_type t) {
  switch (t) {
    case weight_type::q8_0:
      return q8_0_by_hand();
    case weight_type::q4_0:
      return q4_0_by_hand();
    case weight_type::q4_k:
      return k_by_hand(false);
    case weight_type::q5_k:
      return k_by_hand(true);
    default:
      return q6_k_by_hand();
  }
}

}  // namespace

TEST_CASE("the weight types have ggml's ids, names and block sizes", "[quant]") {
  struct row {
    weight_type t;
    std::uint32_t id;
    const char* name;
    int elements, bytes;
  };
  const row table[] = {{weight_type::f32, 0, "f32", 1, 4},        {weight_type::f16, 1, "f16", 1, 2},
                       {weight_type::bf16, 30, "bf16", 1, 2},     {weight_type::q8_0, 8, "q8_0", 32, 34},
                       {weight_type::q4_0, 2, "q4_0", 32, 18},    {weight_type::q4_k, 12, "q4_K", 256, 144},
                       {weight_type::q5_k, 13, "q5_K", 256, 176}, {weight_type::q6_k, 14, "q6_K", 256, 210}};
  for (const row& r : table) {
    INFO(r.name);
    CHECK(ggml_type_id(r.t) == r.id);
    CHECK(std::string(weight_type_name(r.t)) == r.name);
    CHECK(block_elements(r.t) == r.elements);
    CHECK(block_bytes(r.t) == r.bytes);
    REQUIRE(weight_type_from_ggml(r.id).has_value());
    CHECK(*weight_type_from_ggml(r.id) == r.t);
    CHECK(row_bytes(r.t, 0) == std::optional<std::int64_t>(0));
    CHECK(row_bytes(r.t, 2816) == std::optional<std::int64_t>(2816 / r.elements * r.bytes));
    CHECK_FALSE(row_bytes(r.t, -256).has_value());
    if (r.elements > 1) {
      CHECK_FALSE(row_bytes(r.t, r.elements + 16).has_value());
      CHECK_FALSE(row_bytes(r.t, r.elements - 1).has_value());
    }
  }
  CHECK(row_bytes(weight_type::q4_k, 4096) == std::optional<std::int64_t>(16 * 144));
  CHECK(row_bytes(weight_type::q8_0, 4096) == std::optional<std::int64_t>(128 * 34));
  // Ids that exist in ggml but are not read here (Q4_1, Q5_0, Q8_K, IQ2_XXS, a retired id), and
  // ids that do not exist.
  for (std::uint32_t id : {3u, 4u, 6u, 7u, 9u, 10u, 11u, 15u, 16u, 31u, 39u, 77u, 0xffffffffu}) {
    INFO("id " << id);
    CHECK_FALSE(weight_type_from_ggml(id).has_value());
  }
}

TEST_CASE("each block type decodes a hand-built block as its format says", "[quant]") {
  for (weight_type t : block_types) {
    INFO(weight_type_name(t));
    const hand_block b = by_hand(t);
    const int n = block_elements(t);
    const auto got = values(t, b.bytes.data(), n);
    for (int e = 0; e < n; ++e) {
      INFO("value " << e);
      const double want = b.want[static_cast<std::size_t>(e)];
      REQUIRE(std::fabs(got[static_cast<std::size_t>(e)] - want) <= 1e-6 * (1.0 + std::fabs(want)));
    }
    // quant_matvec reads the same block the same way: three rows (the block repeated, with the
    // second row's bytes as hand-built and the others zeroed) against a random x.
    std::vector<std::uint8_t> w(3 * b.bytes.size(), 0);
    std::copy(b.bytes.begin(), b.bytes.end(), w.begin() + static_cast<long>(b.bytes.size()));
    const auto x = random_floats(static_cast<std::size_t>(n), 3);
    double want = 0.0, mag = 0.0;
    for (int e = 0; e < n; ++e) {
      want += b.want[static_cast<std::size_t>(e)] * x[static_cast<std::size_t>(e)];
      mag += std::fabs(b.want[static_cast<std::size_t>(e)] * x[static_cast<std::size_t>(e)]);
    }
    float y[3] = {1.0f, 1.0f, 1.0f};
    cpu::quant_matvec(t, 3, n, w.data(), x.data(), y);
    CHECK(y[0] == 0.0f);
    CHECK(y[2] == 0.0f);
    CHECK(std::fabs(y[1] - want) <= 1e-5 * mag);
  }
}

TEST_CASE("quantize then dequantize stays within each type's bound", "[quant]") {
  // Bounds, per value, over random rows of three magnitudes (uniform in +-s, s = 0.05, 1, 300),
  // with amax the largest |x| of the value's block (32 values; 256 for the K types):
  //  f16, bf16: half an ulp, |x| 2^-11 and |x| 2^-8 (2^-25 below the normal halves);
  //  q8_0: half a step, step = amax/127, plus the fp16 rounding of d: amax / 200;
  //  q4_0: a whole step amax/8 (the end opposite the largest value clamps to +7): amax * 0.13;
  //  q6_K: likewise a whole step amax/32 (q in -32..31, the largest maps to -32), plus the int8
  //  rounding of the sub-block scales: amax * 0.035;
  //  q4_K, q5_K: half a step (sub-block range / 15 or / 31) plus the 6-bit rounding of the
  //  sub-block scale and min: amax * 0.08, 0.05.
  // And the root-mean-square error over the row, a tighter check on the bulk of the values:
  // q8_0 0.003, q4_0 0.05, q4_K 0.04, q5_K 0.02, q6_K 0.01 (of amax over the row).
  // Smaller blocks than s = 0.05 lose more: d is an fp16 and falls among fp16's subnormals
  // (below 6.1e-5; q6_K's d is amax / 4096), a property of the formats, not of the quantizers.
  struct bound {
    weight_type t;
    double per_value, rms;
  };
  const bound bounds[] = {{weight_type::q8_0, 1.0 / 200, 0.003},
                          {weight_type::q4_0, 0.13, 0.05},
                          {weight_type::q4_k, 0.08, 0.04},
                          {weight_type::q5_k, 0.05, 0.02},
                          {weight_type::q6_k, 0.035, 0.01}};
  const int n = 2816;
  for (float s : {0.05f, 1.0f, 300.0f}) {
    const auto x = random_floats(n, 7, -s, s);
    for (weight_type t : {weight_type::f32, weight_type::f16, weight_type::bf16}) {
      const auto back = values(t, stored(t, x).data(), n);
      const double rel = t == weight_type::f32 ? 0.0 : t == weight_type::f16 ? 1.0 / 2048 : 1.0 / 256;
      const double floor = t == weight_type::f16 ? std::ldexp(1.0, -25) : 0.0;  // f16 subnormals
      for (int i = 0; i < n; ++i)
        REQUIRE(std::fabs(back[static_cast<std::size_t>(i)] - x[static_cast<std::size_t>(i)]) <=
                std::max(floor, rel * std::fabs(x[static_cast<std::size_t>(i)])));
    }
    for (const bound& b : bounds) {
      INFO(weight_type_name(b.t) << " scale " << s);
      const auto back = values(b.t, stored(b.t, x).data(), n);
      const int be = block_elements(b.t);
      double sq = 0.0, row_amax = 0.0, worst = 0.0;
      for (int blk = 0; blk < n / be; ++blk) {
        double amax = 0.0;
        for (int i = blk * be; i < (blk + 1) * be; ++i)
          amax = std::max(amax, static_cast<double>(std::fabs(x[static_cast<std::size_t>(i)])));
        row_amax = std::max(row_amax, amax);
        for (int i = blk * be; i < (blk + 1) * be; ++i) {
          const double err = std::fabs(static_cast<double>(back[static_cast<std::size_t>(i)]) -
                                       x[static_cast<std::size_t>(i)]);
          worst = std::max(worst, err / amax);
          sq += err * err;
        }
      }
      INFO("worst " << worst << " of amax, rms " << std::sqrt(sq / n) / row_amax << " of amax");
      CHECK(worst <= b.per_value);
      CHECK(std::sqrt(sq / n) <= b.rms * row_amax);
    }
  }
  // An all-zero row comes back as zeros, and a constant row as (nearly) itself.
  for (weight_type t : all_types) {
    INFO(weight_type_name(t));
    const std::vector<float> zeros(256, 0.0f), fives(256, 5.0f);
    for (float v : values(t, stored(t, zeros).data(), 256)) REQUIRE(v == 0.0f);
    for (float v : values(t, stored(t, fives).data(), 256)) REQUIRE(std::fabs(v - 5.0f) <= 0.05f);
  }
}

namespace {

// llama.cpp's quantize_row_q8_0_ref and quantize_row_q4_0_ref as the format notes state them,
// with the fp16 rounding of runtime/model/half_float.
std::vector<std::uint8_t> q8_0_reference(const std::vector<float>& x) {
  std::vector<std::uint8_t> out;
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = x.data() + 32 * b;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = amax > std::fabs(v[j]) ? amax : std::fabs(v[j]);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t h = anchorage::float_to_f16(d);
    out.push_back(static_cast<std::uint8_t>(h & 0xff));
    out.push_back(static_cast<std::uint8_t>(h >> 8));
    for (int j = 0; j < 32; ++j)
      out.push_back(static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(v[j] * id))));
  }
  return out;
}

std::vector<std::uint8_t> q4_0_reference(const std::vector<float>& x) {
  std::vector<std::uint8_t> out;
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = x.data() + 32 * b;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(v[j])) {
        amax = std::fabs(v[j]);
        max = v[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t h = anchorage::float_to_f16(d);
    out.push_back(static_cast<std::uint8_t>(h & 0xff));
    out.push_back(static_cast<std::uint8_t>(h >> 8));
    for (int j = 0; j < 16; ++j) {
      const auto lo = static_cast<std::uint8_t>(
          std::min(15, static_cast<int>(static_cast<std::int8_t>(v[j] * id + 8.5f))));
      const auto hi = static_cast<std::uint8_t>(
          std::min(15, static_cast<int>(static_cast<std::int8_t>(v[j + 16] * id + 8.5f))));
      out.push_back(static_cast<std::uint8_t>(lo | (hi << 4)));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("q8_0 and q4_0 quantize byte for byte as llama.cpp's reference quantizers", "[quant]") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    auto x = random_floats(4096, seed, -2.0f, 2.0f);
    // Blocks with ties: values on the rounding boundaries, equal magnitudes of both signs, zeros.
    for (int j = 0; j < 32; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j - 16) * 0.5f;
    for (int j = 32; j < 64; ++j)
      x[static_cast<std::size_t>(j)] = (j % 2 ? 1.0f : -1.0f) * static_cast<float>(j % 5);
    for (int j = 64; j < 96; ++j) x[static_cast<std::size_t>(j)] = 0.0f;
    for (int j = 96; j < 128; ++j) x[static_cast<std::size_t>(j)] *= 1e-6f;
    // d = 1 exactly: q8_0's x / d lands on halves (roundf takes them away from zero), q4_0's
    // x / d + 8.5 on integers.
    x[128] = 127.0f;
    for (int j = 129; j < 160; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j - 144) + 0.5f;
    x[160] = -8.0f;
    for (int j = 161; j < 192; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j % 16 - 8) + 0.5f;
    CHECK(stored(weight_type::q8_0, x) == q8_0_reference(x));
    CHECK(stored(weight_type::q4_0, x) == q4_0_reference(x));
  }
}

TEST_CASE("quant_matvec is a dot product with the dequantized rows", "[quant]") {
  // Against dequantize_row and a double-precision dot product: within 1e-5 of the sum of the
  // terms' magnitudes (float rounding over k terms in 16 lanes needs about k/16 * 2^-24 of it).
  // Sizes with an odd number of K blocks (2816 = 11 x 256), and for the float types lengths that
  // leave 16-value and single-value tails.
  for (weight_type t : all_types) {
    std::vector<int> ks = {256, 512, 2816};
    if (block_elements(t) == 1) ks.insert(ks.end(), {23, 2816 + 16 + 7});
    for (int k : ks) {
      for (int rows : {1, 3, 17}) {
        INFO(weight_type_name(t) << " k " << k << " rows " << rows);
        const auto rb = static_cast<std::size_t>(*row_bytes(t, k));
        std::vector<std::uint8_t> w(rb * static_cast<std::size_t>(rows));
        for (int r = 0; r < rows; ++r) {
          // Rows of different scales, some all positive (K-type mins of zero).
          const float s = 0.01f * static_cast<float>(1 + r % 5);
          const auto v = random_floats(static_cast<std::size_t>(k), 100 + static_cast<std::uint64_t>(r),
                                       r % 4 == 3 ? 0.0f : -s, s);
          quantize_row(t, v.data(), w.data() + rb * static_cast<std::size_t>(r), k);
        }
        const auto x = random_floats(static_cast<std::size_t>(k), 9, -3.0f, 3.0f);
        std::vector<float> y(static_cast<std::size_t>(rows)), again(y.size());
        cpu::quant_matvec(t, rows, k, w.data(), x.data(), y.data());
        cpu::quant_matvec(t, rows, k, w.data(), x.data(), again.data());
        REQUIRE(std::memcmp(y.data(), again.data(), y.size() * sizeof(float)) == 0);
        for (int r = 0; r < rows; ++r) {
          const std::uint8_t* row = w.data() + rb * static_cast<std::size_t>(r);
          const auto wr = values(t, row, k);
          double want = 0.0;
          for (int j = 0; j < k; ++j)
            want += static_cast<double>(wr[static_cast<std::size_t>(j)]) * x[static_cast<std::size_t>(j)];
          const double mag = dot_magnitude(t, row, wr.data(), x.data(), k);
          INFO("row " << r << " got " << y[static_cast<std::size_t>(r)] << " want " << want << " magnitude "
                      << mag);
          REQUIRE(std::fabs(y[static_cast<std::size_t>(r)] - want) <= 1e-5 * mag);
        }
      }
    }
  }
}

TEST_CASE("f16 and bf16 convert bit patterns exactly", "[quant]") {
  // Decoding: every half agrees with runtime/model/half_float's (a separate implementation), bit
  // for bit, NaNs included; and through dequantize_row.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto x = static_cast<std::uint16_t>(h);
    REQUIRE(bits(f16_to_f32(x)) == bits(anchorage::f16_to_float(x)));
    REQUIRE(bits(bf16_to_f32(x)) == bits(anchorage::bf16_to_float(x)));
  }
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(f16_to_f32(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(f16_to_f32(0x7bff) == 65504.0f);
  CHECK(f16_to_f32(0x7c00) == std::numeric_limits<float>::infinity());
  CHECK(f16_to_f32(0xfc00) == -std::numeric_limits<float>::infinity());
  CHECK(bits(f16_to_f32(0x8000)) == 0x80000000u);  // -0.0
  CHECK(std::isnan(f16_to_f32(0x7e00)));
  CHECK(std::isnan(f16_to_f32(0x7c01)));  // signalling
  CHECK(bits(bf16_to_f32(0x8000)) == 0x80000000u);
  CHECK(bf16_to_f32(0x0001) == from_bits(0x00010000u));  // a float subnormal
  CHECK(std::isnan(bf16_to_f32(0x7f81)));

  // Encoding, round to nearest, ties to even.
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie: down to even
  CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie: up to even
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3c01);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65519.99f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);  // the tie past the largest half rounds to inf
  CHECK(f32_to_f16(-1e10f) == 0xfc00);
  CHECK(f32_to_f16(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);     // tie between 0 and the smallest: 0
  CHECK(f32_to_f16(std::ldexp(3.0f, -26)) == 0x0001);     // 0.75 of the smallest: up
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);     // 1.5 of the smallest: tie, to 2
  CHECK(f32_to_f16(std::ldexp(5.0f, -25)) == 0x0002);     // 2.5: tie, to 2
  CHECK(f32_to_f16(std::ldexp(2047.0f, -25)) == 0x0400);  // the largest subnormal rounds up to normal
  CHECK(f32_to_f16(-std::ldexp(1.0f, -30)) == 0x8000);
  CHECK(f32_to_f16(from_bits(0x7fc00000u)) == 0x7e00);                       // quiet NaN
  CHECK((f32_to_f16(from_bits(0x7f800001u)) & 0x7e00) == 0x7e00);            // signalling: made quiet
  CHECK(f32_to_f16(from_bits(0xffc12000u)) == (0xfe00 | (0x412000 >> 13)));  // sign, payload top bits

  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(-0.0f) == 0x8000);
  CHECK(f32_to_bf16(from_bits(0x3f808000u)) == 0x3f80);  // tie: down to even
  CHECK(f32_to_bf16(from_bits(0x3f818000u)) == 0x3f82);  // tie: up to even
  CHECK(f32_to_bf16(from_bits(0x3f808001u)) == 0x3f81);
  CHECK(f32_to_bf16(from_bits(0x7f7fffffu)) == 0x7f80);  // the largest float rounds to inf
  CHECK(f32_to_bf16(from_bits(0x00008000u)) == 0x0000);  // subnormal tie: to even
  CHECK(f32_to_bf16(from_bits(0x00018000u)) == 0x0002);
  CHECK(f32_to_bf16(from_bits(0x7f800001u)) == 0x7fc0);  // signalling NaN made quiet
  CHECK(f32_to_bf16(from_bits(0xffc00000u)) == 0xffc0);
  CHECK(f32_to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);

  // The encoders against half_float's on every half's value and its neighbours and midpoints,
  // and against the CPU's own conversion instruction where it has one.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    for (int step : {-1, 0, 1}) {
      const float f = from_bits(bits(anchorage::f16_to_float(static_cast<std::uint16_t>(h))) +
                                static_cast<std::uint32_t>(step));
      if (std::isnan(f)) continue;
      REQUIRE(f32_to_f16(f) == anchorage::float_to_f16(f));
    }
    const float g = from_bits(h << 16 | 0x8000u);  // a bf16 midpoint
    if (!std::isnan(g)) REQUIRE(f32_to_bf16(g) == anchorage::float_to_bf16(g));
  }
}

#if defined(__x86_64__)
namespace {
__attribute__((target("f16c"))) std::uint16_t f16c_round(float f) {
  return static_cast<std::uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
}  // namespace

TEST_CASE("f32_to_f16 matches the F16C instruction on random floats", "[quant]") {
  if (!__builtin_cpu_supports("f16c")) return;
  std::mt19937 rng(5);  // 32-bit draws
  for (int i = 0; i < 2000000; ++i) {
    // Random bits, weighted towards the half range (exponents 100..150).
    auto b = static_cast<std::uint32_t>(rng());
    if (i % 2) b = (b & 0x807fffffu) | static_cast<std::uint32_t>((100u + rng() % 50u) << 23);
    const float f = from_bits(b);
    INFO("bits " << b);
    REQUIRE(f32_to_f16(f) == f16c_round(f));
  }
}
#endif

TEST_CASE("quant_matvec reads every f16 and bf16 value exactly", "[quant]") {
  // Rows of 16 copies of one value against x = (1, 0, ..., 0): y is that value (the vector
  // decoders against the scalar ones, subnormals included); inf and NaN pass through.
  for (weight_type t : {weight_type::f16, weight_type::bf16}) {
    INFO(weight_type_name(t));
    std::vector<std::uint16_t> w;
    std::vector<float> want;
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
      const auto x = static_cast<std::uint16_t>(h);
      const float v = t == weight_type::f16 ? f16_to_f32(x) : bf16_to_f32(x);
      if (!std::isfinite(v)) continue;
      w.insert(w.end(), 16, x);
      want.push_back(v);
    }
    const int rows = static_cast<int>(want.size());
    std::vector<float> x(16, 0.0f), y(want.size());
    x[0] = 1.0f;
    cpu::quant_matvec(t, rows, 16, w.data(), x.data(), y.data());
    for (int r = 0; r < rows; ++r)
      REQUIRE(y[static_cast<std::size_t>(r)] == want[static_cast<std::size_t>(r)]);

    const std::uint16_t inf = t == weight_type::f16 ? 0x7c00 : 0x7f80,
                        nan = t == weight_type::f16 ? 0x7e01 : 0x7fc1;
    std::vector<std::uint16_t> special(32, 0);
    special[0] = inf;
    special[16] = nan;
    float z[2];
    cpu::quant_matvec(t, 2, 16, special.data(), x.data(), z);
    CHECK(z[0] == std::numeric_limits<float>::infinity());
    CHECK(std::isnan(z[1]));
  }
}
