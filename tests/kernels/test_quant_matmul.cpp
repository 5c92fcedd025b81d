// cpu::quant_matmul (kernels/quant_matmul.hpp): every output row has quant_matvec's bits for
// that activation row, whatever the batch around it, strided or not; it is a dot product with
// the dequantized rows; and it writes y's rows and nothing else.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dequantize.hpp"
#include "kernels/quant_matmul.hpp"
#include "kernels/quant_matvec.hpp"
#include "kernels/quantize.hpp"
#include "kernels/weight_type.hpp"
#include "tests/support/quant_tolerance.hpp"

using namespace anchorage::kernels;
using anchorage::testing::dot_magnitude;
using anchorage::testing::stored_rows;

namespace {

constexpr weight_type all_types[] = {weight_type::f32,  weight_type::f16,  weight_type::bf16,
                                     weight_type::q8_0, weight_type::q4_0, weight_type::q4_k,
                                     weight_type::q5_k, weight_type::q6_k};

// The lengths each type allows, with tails for the float types (16-value and single-value ones
// past the last 32) and an odd number of blocks for the block types.
std::vector<int> lengths(weight_type t) {
  switch (block_elements(t)) {
    case 1:
      return {7, 23, 48, 256 + 16 + 7};
    case 32:
      return {32, 96, 256};
    default:
      return {256, 768};
  }
}

constexpr float sentinel = -12345.5f;

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// m activation rows of k values at stride ldx (the gaps hold large values, which would show if
// they were read): each row of its own magnitude, 1e-3 to 1e3, with some values far larger.
std::vector<float> activations(int m, int k, int ldx, std::uint64_t seed) {
  std::vector<float> x(static_cast<std::size_t>(m) * static_cast<std::size_t>(ldx), 1e30f);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), e(-3.0f, 3.0f);
  for (int i = 0; i < m; ++i) {
    const float scale = std::pow(10.0f, e(rng));
    for (int j = 0; j < k; ++j) {
      float v = u(rng) * scale;
      if (j % 37 == i % 37) v *= 1000.0f;
      x[static_cast<std::size_t>(i) * static_cast<std::size_t>(ldx) + static_cast<std::size_t>(j)] = v;
    }
  }
  return x;
}

// quant_matmul into a y of m rows at stride ldy, surrounded by `pad` sentinels on each side and
// with sentinels in the gaps; checks that every sentinel outside the m x n values survived.
std::vector<float> matmul(weight_type t, int m, int n, int k, const std::vector<float>& x, int ldx,
                          const std::vector<std::uint8_t>& w, int ldy) {
  constexpr std::size_t pad = 19;
  std::vector<float> buf(pad + static_cast<std::size_t>(m) * static_cast<std::size_t>(ldy) + pad, sentinel);
  cpu::quant_matmul(t, m, n, k, x.data(), ldx, w.data(), buf.data() + pad, ldy);
  for (std::size_t p = 0; p < buf.size(); ++p) {
    const bool inside = p >= pad && p < pad + static_cast<std::size_t>(m) * static_cast<std::size_t>(ldy) &&
                        (p - pad) % static_cast<std::size_t>(ldy) < static_cast<std::size_t>(n);
    if (!inside) REQUIRE(bits(buf[p]) == bits(sentinel));
  }
  return std::vector<float>(buf.begin() + static_cast<long>(pad), buf.end() - static_cast<long>(pad));
}

// quant_matvec's row for activation row i.
std::vector<float> matvec_row(weight_type t, int n, int k, const std::vector<float>& x, int ldx, int i,
                              const std::vector<std::uint8_t>& w) {
  std::vector<float> y(static_cast<std::size_t>(n));
  cpu::quant_matvec(t, n, k, w.data(), x.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(ldx),
                    y.data());
  return y;
}

// Bit for bit: row i of y (stride ldy) against quant_matvec on row i of x.
void require_rows_match(weight_type t, int m, int n, int k, const std::vector<float>& x, int ldx,
                        const std::vector<std::uint8_t>& w, const std::vector<float>& y, int ldy) {
  for (int i = 0; i < m; ++i) {
    const auto want = matvec_row(t, n, k, x, ldx, i, w);
    for (int r = 0; r < n; ++r) {
      const float got =
          y[static_cast<std::size_t>(i) * static_cast<std::size_t>(ldy) + static_cast<std::size_t>(r)];
      INFO("row " << i << " weight row " << r << " got " << got << " want "
                  << want[static_cast<std::size_t>(r)]);
      REQUIRE(bits(got) == bits(want[static_cast<std::size_t>(r)]));
    }
  }
}

}  // namespace

TEST_CASE("quant_matmul gives each row quant_matvec's bits", "[quant]") {
  // Every type and length, batches that fill the groups of eight (and four for q6_K) and batches
  // that leave every kind of remainder, dense and strided.
  for (weight_type t : all_types) {
    for (int k : lengths(t)) {
      for (int n : {1, 5, 33}) {
        const auto w =
            stored_rows(t, n, k, 1000 + static_cast<std::uint64_t>(k) * 7 + static_cast<std::uint64_t>(n));
        for (int m : {1, 2, 3, 7, 16, 64, 257}) {
          for (bool strided : {false, true}) {
            const int ldx = strided ? k + 5 : k, ldy = strided ? n + 3 : n;
            INFO(weight_type_name(t) << " k " << k << " n " << n << " m " << m
                                     << (strided ? " strided" : ""));
            const auto x = activations(m, k, ldx, 77 + static_cast<std::uint64_t>(m));
            const auto y = matmul(t, m, n, k, x, ldx, w, ldy);
            require_rows_match(t, m, n, k, x, ldx, w, y, ldy);
          }
        }
      }
    }
  }
}

TEST_CASE("a quant_matmul row does not depend on the other rows", "[quant]") {
  // One activation row alone, then at positions 0, 5, 6, 8 and 12 of 13 rows (inside a full group,
  // in the passes of 4, 2 and 1 that finish a batch) among two different sets of neighbours.
  const int m = 13, n = 9;
  for (weight_type t : all_types) {
    const int k = lengths(t).back();
    INFO(weight_type_name(t) << " k " << k);
    const auto w = stored_rows(t, n, k, 5);
    const auto one = activations(1, k, k, 123);
    const auto alone = matmul(t, 1, n, k, one, k, w, n);
    for (std::uint64_t seed : {1u, 2u}) {
      for (int at : {0, 5, 6, 8, 12}) {
        auto x = activations(m, k, k, seed);
        std::copy(one.begin(), one.end(), x.begin() + static_cast<long>(at) * k);
        const auto y = matmul(t, m, n, k, x, k, w, n);
        INFO("seed " << seed << " at " << at);
        REQUIRE(std::memcmp(y.data() + static_cast<long>(at) * n, alone.data(), sizeof(float) * n) == 0);
      }
    }
  }
}

TEST_CASE("quant_matmul is a dot product with the dequantized rows", "[quant]") {
  // Against dequantize_row and a double-precision dot product, within quant_matvec's test bound.
  const int m = 11, n = 6;
  for (weight_type t : all_types) {
    for (int k : lengths(t)) {
      INFO(weight_type_name(t) << " k " << k);
      const auto w = stored_rows(t, n, k, 31);
      const auto x = activations(m, k, k, 32);
      const auto y = matmul(t, m, n, k, x, k, w, n);
      const auto rb = static_cast<std::size_t>(*row_bytes(t, k));
      for (int r = 0; r < n; ++r) {
        const std::uint8_t* row = w.data() + rb * static_cast<std::size_t>(r);
        std::vector<float> wr(static_cast<std::size_t>(k));
        dequantize_row(t, row, wr.data(), k);
        for (int i = 0; i < m; ++i) {
          const float* xi = x.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(k);
          double want = 0.0;
          for (int j = 0; j < k; ++j) want += static_cast<double>(wr[static_cast<std::size_t>(j)]) * xi[j];
          const double mag = dot_magnitude(t, row, wr.data(), xi, k);
          const float got = y[static_cast<std::size_t>(i) * n + static_cast<std::size_t>(r)];
          INFO("row " << i << " weight row " << r << " got " << got << " want " << want);
          REQUIRE(std::fabs(got - want) <= 1e-5 * mag);
        }
      }
    }
  }
}

TEST_CASE("quant_matmul with no rows writes nothing", "[quant]") {
  for (weight_type t : all_types) {
    const int k = lengths(t).front();
    INFO(weight_type_name(t));
    const auto w = stored_rows(t, 4, k, 3);
    const auto x = activations(4, k, k, 4);
    // matmul() checks that every value of its buffer past the m x n product kept its sentinel.
    const auto none = matmul(t, 0, 4, k, x, k, w, 4);
    CHECK(none.empty());
    const auto zero_n = matmul(t, 4, 0, k, x, k, w, 3);  // four rows of three sentinels each
    CHECK(zero_n.size() == 12);
    for (float v : zero_n) CHECK(bits(v) == bits(sentinel));
    // And with nothing to read: no activations, no weights.
    float y[3] = {sentinel, sentinel, sentinel};
    cpu::quant_matmul(t, 0, 3, k, nullptr, k, nullptr, y, 3);
    cpu::quant_matmul(t, 3, 0, k, nullptr, k, nullptr, y, 1);
    for (float v : y) CHECK(bits(v) == bits(sentinel));
  }
}
