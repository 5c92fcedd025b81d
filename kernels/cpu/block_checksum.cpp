#include "kernels/block_checksum.hpp"

#include <cstring>

namespace anchorage::kernels::cpu {
namespace {

constexpr long lanes = 8;

// The words in `lanes` interleaved lanes (word i = lanes * q + j in lane j), without a multiply
// in the loop: per lane, P = sum_q w and T = sum_q (Q - 1 - q) w (T grows by P before each word),
// so sum_q q w = (Q - 1) P - T. Then sum_i (i + 1) w_i = lanes * sum_j sum_q q w + sum_j (j + 1) P_j.
// Exact in 64-bit modular arithmetic, so the result is the plain loop's, bit for bit.
__attribute__((target_clones("avx512f", "avx2", "default"))) void lane_sums(const unsigned char* base,
                                                                            long quads, std::uint64_t* s0,
                                                                            std::uint64_t* s1) {
  std::uint64_t p[lanes] = {}, t[lanes] = {};
  for (long q = 0; q < quads; ++q) {
    std::uint64_t w[lanes];
    std::memcpy(w, base + q * lanes * 8, sizeof w);  // x86-64 and CUDA devices are little-endian
    for (long j = 0; j < lanes; ++j) {
      t[j] += p[j];
      p[j] += w[j];
    }
  }
  std::uint64_t a = 0, b = 0;
  const auto qn = static_cast<std::uint64_t>(quads);
  for (long j = 0; j < lanes; ++j) {
    const std::uint64_t sum_qw = (qn - 1) * p[j] - t[j];
    a += p[j];
    b += static_cast<std::uint64_t>(lanes) * sum_qw + static_cast<std::uint64_t>(j + 1) * p[j];
  }
  *s0 = a;
  *s1 = b;
}

}  // namespace

void block_checksum(const void* buf, long row_bytes, long a, long b, std::uint64_t* out) {
  const auto* base = static_cast<const unsigned char*>(buf) + a * row_bytes;
  const long words = (b - a) * row_bytes / 8;
  const long quads = words / lanes;
  std::uint64_t s0 = 0, s1 = 0;
  if (quads > 0) lane_sums(base, quads, &s0, &s1);
  for (long i = quads * lanes; i < words; ++i) {
    std::uint64_t w;
    std::memcpy(&w, base + i * 8, 8);
    s0 += w;
    s1 += static_cast<std::uint64_t>(i + 1) * w;
  }
  out[0] = s0;
  out[1] = s1;
}

}  // namespace anchorage::kernels::cpu
