#include "kernels/int8_matmul.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/cpu/exact_intrinsics.hpp"
#include "kernels/dequantize.hpp"
#include "kernels/quantize.hpp"

namespace anchorage::kernels::cpu {
namespace {

constexpr int group = 32;  // values per activation block and per weight block (A, B)
constexpr int panel = 16;  // weight rows unpacked together: one vector of outputs

std::uint16_t u16_at(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }

constexpr int half = 16;  // values per Q6_K scale: half an activation block

// One weight row as bytes u and, per block of 32, A and B (int8_reads' table); for q6_K, u = q
// (0..63) and A per 16 values (a[2g + h]), B unused.
void unpack_row(weight_type t, const std::uint8_t* row, int k, std::uint8_t* u, float* a, float* b) {
  const int bb = block_bytes(t);
  switch (t) {
    case weight_type::q8_0:
      for (int g = 0; g < k / 32; ++g) {
        const std::uint8_t* blk = row + static_cast<long>(g) * bb;
        const float d = f16_to_f32(u16_at(blk));
        for (int e = 0; e < 32; ++e) u[32 * g + e] = static_cast<std::uint8_t>(blk[2 + e] ^ 0x80);
        a[g] = d;
        b[g] = -128.0f * d;
      }
      return;
    case weight_type::q4_0:
      for (int g = 0; g < k / 32; ++g) {
        const std::uint8_t* blk = row + static_cast<long>(g) * bb;
        const float d = f16_to_f32(u16_at(blk));
        for (int e = 0; e < 16; ++e) {
          u[32 * g + e] = static_cast<std::uint8_t>(blk[2 + e] & 0x0f);
          u[32 * g + e + 16] = static_cast<std::uint8_t>(blk[2 + e] >> 4);
        }
        a[g] = d;
        b[g] = -8.0f * d;
      }
      return;
    case weight_type::q4_k:
    case weight_type::q5_k: {
      const bool five = t == weight_type::q5_k;
      for (int s0 = 0; s0 < k / 256; ++s0) {
        const std::uint8_t* blk = row + static_cast<long>(s0) * bb;
        const float d = f16_to_f32(u16_at(blk)), dmin = f16_to_f32(u16_at(blk + 2));
        const std::uint8_t* qh = five ? blk + 16 : nullptr;
        const std::uint8_t* qs = five ? blk + 48 : blk + 16;
        for (int s = 0; s < 8; ++s) {
          const int c = s / 2;
          int sc, m;
          k_scale_min(blk + 4, s, &sc, &m);
          a[8 * s0 + s] = d * static_cast<float>(sc);
          b[8 * s0 + s] = -(dmin * static_cast<float>(m));
          std::uint8_t* out = u + 256L * s0 + 32 * s;
          for (int l = 0; l < 32; ++l) {
            const std::uint8_t byte = qs[32 * c + l];
            int q = s % 2 == 0 ? (byte & 0x0f) : (byte >> 4);
            if (five && ((qh[l] >> s) & 1)) q += 16;
            out[l] = static_cast<std::uint8_t>(q);
          }
        }
      }
      return;
    }
    case weight_type::q6_k:
      // dequantize_row's layout: value 128 hh + 32 tt + l of a super-block takes its low 4 bits
      // from ql[64 hh + l + 32 (tt & 1)] (the high nibble for tt >= 2), its top 2 from bits 2 tt,
      // 2 tt + 1 of qh[32 hh + l].
      for (int s0 = 0; s0 < k / 256; ++s0) {
        const std::uint8_t* blk = row + static_cast<long>(s0) * bb;
        const std::uint8_t* ql = blk;
        const std::uint8_t* qh = blk + 128;
        const float d = f16_to_f32(u16_at(blk + 208));
        for (int j = 0; j < 16; ++j)
          a[16 * s0 + j] = d * static_cast<float>(static_cast<std::int8_t>(blk[192 + j]));
        for (int hh = 0; hh < 2; ++hh)
          for (int tt = 0; tt < 4; ++tt)
            for (int l = 0; l < 32; ++l) {
              const std::uint8_t low_byte = ql[64 * hh + l + 32 * (tt & 1)];
              const int low = tt < 2 ? (low_byte & 0x0f) : (low_byte >> 4);
              const int high = (qh[32 * hh + l] >> (2 * tt)) & 3;
              u[256L * s0 + 128 * hh + 32 * tt + l] = static_cast<std::uint8_t>(low | (high << 4));
            }
      }
      return;
    default:
      assert(false && "int8_matmul: a type int8_reads refuses");
  }
}

// One output, the order int8_matmul's contract states.
float plain_dot(const std::uint8_t* u, const float* a, const float* b, const std::int8_t* q, const float* d,
                const float* c, int groups) {
  float f = 0.0f;
  for (int g = 0; g < groups; ++g) {
    std::int32_t acc = 0;
    for (int e = 0; e < group; ++e) acc += static_cast<std::int32_t>(u[group * g + e]) * q[group * g + e];
    f = std::fma(static_cast<float>(acc) * a[g], d[g], f);
    f = std::fma(b[g], c[g], f);
  }
  return f;
}

// Q6_K's: the two halves of each block in order, u - 32 summed exactly.
float plain_dot6(const std::uint8_t* u, const float* a, const std::int8_t* q, const float* d, int groups) {
  float f = 0.0f;
  for (int g = 0; g < groups; ++g)
    for (int h = 0; h < 2; ++h) {
      std::int32_t acc = 0;
      for (int e = half * (2 * g + h); e < half * (2 * g + h + 1); ++e)
        acc += (static_cast<std::int32_t>(u[e]) - 32) * q[e];
      f = std::fma(static_cast<float>(acc) * a[2 * g + h], d[g], f);
    }
  return f;
}

void plain_matmul(weight_type type, const q8_activations& x, int n, const std::uint8_t* w, std::size_t row,
                  float* y, int ldy) {
  const int groups = x.k / group;
  const bool six = type == weight_type::q6_k;
  thread_local std::vector<std::uint8_t> u;
  thread_local std::vector<float> a, b;
  u.resize(static_cast<std::size_t>(x.k));
  a.resize(static_cast<std::size_t>(x.k / half));
  b.resize(static_cast<std::size_t>(groups));
  for (int r = 0; r < n; ++r) {
    unpack_row(type, w + row * static_cast<std::size_t>(r), x.k, u.data(), a.data(), b.data());
    for (int i = 0; i < x.m; ++i) {
      const std::int8_t* q = x.q.data() + static_cast<long>(i) * x.k;
      const float* d = x.d.data() + static_cast<long>(i) * groups;
      y[static_cast<long>(i) * ldy + r] = six ? plain_dot6(u.data(), a.data(), q, d, groups)
                                              : plain_dot(u.data(), a.data(), b.data(), q, d,
                                                          x.c.data() + static_cast<long>(i) * groups, groups);
    }
  }
}

// The vector form. A panel of 16 weight rows unpacked: for block g, 512 bytes (eight steps of
// four values: 16 rows of 4 bytes each, so one vector holds a step of every row), then A and B of
// the 16 rows per block. R activation rows at a time: per step one load of the weights and R
// dot products, each activation row's 4 bytes broadcast; per block R conversions and the two
// fused multiply-adds of the contract, in its order, on 16 outputs at once. Q6_K (`six`): steps
// 0-3 and 4-7 are the block's two halves, each summed apart from -32 times the activations' sum
// over it (s), then A of the half per row (pa: two per block, the halves in order).
template <int R, bool six>
__attribute__((target("avx512f,avx512bw,avx512vnni,fma"))) void vector_rows(
    const std::uint8_t* pk, const float* pa, const float* pb, int groups, const std::int8_t* q, int k,
    const float* d, const float* c, const std::int16_t* s, float* y, int ldy, __mmask16 cols) {
  __m512 f[R];
  __m512i acc[R];
  for (int r = 0; r < R; ++r) f[r] = _mm512_setzero_ps();
  for (int g = 0; g < groups; ++g) {
    const std::uint8_t* wg = pk + static_cast<long>(g) * 512;
    if constexpr (six) {
      for (int h = 0; h < 2; ++h) {
        for (int r = 0; r < R; ++r)
          acc[r] = _mm512_set1_epi32(-32 * s[static_cast<long>(r) * 2 * groups + 2 * g + h]);
        for (int t = 4 * h; t < 4 * h + 4; ++t) {
          const __m512i wv = _mm512_loadu_si512(wg + 64 * t);
          for (int r = 0; r < R; ++r) {
            std::int32_t four;
            std::memcpy(&four, q + static_cast<long>(r) * k + group * g + 4 * t, 4);
            acc[r] = _mm512_dpbusd_epi32(acc[r], wv, _mm512_set1_epi32(four));
          }
        }
        const __m512 av = _mm512_loadu_ps(pa + panel * (2 * g + h));
        for (int r = 0; r < R; ++r) {
          const __m512 scaled = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xffff, acc[r]), av);
          f[r] = _mm512_fmadd_ps(scaled, _mm512_set1_ps(d[static_cast<long>(r) * groups + g]), f[r]);
        }
      }
      continue;
    }
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int t = 0; t < 8; ++t) {
      const __m512i wv = _mm512_loadu_si512(wg + 64 * t);
      for (int r = 0; r < R; ++r) {
        std::int32_t four;
        std::memcpy(&four, q + static_cast<long>(r) * k + group * g + 4 * t, 4);
        acc[r] = _mm512_dpbusd_epi32(acc[r], wv, _mm512_set1_epi32(four));
      }
    }
    const __m512 av = _mm512_loadu_ps(pa + panel * g), bv = _mm512_loadu_ps(pb + panel * g);
    for (int r = 0; r < R; ++r) {
      const __m512 scaled = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xffff, acc[r]), av);
      f[r] = _mm512_fmadd_ps(scaled, _mm512_set1_ps(d[static_cast<long>(r) * groups + g]), f[r]);
      f[r] = _mm512_fmadd_ps(bv, _mm512_set1_ps(c[static_cast<long>(r) * groups + g]), f[r]);
    }
  }
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + static_cast<long>(r) * ldy, cols, f[r]);
}

using rows_fn = void (*)(const std::uint8_t*, const float*, const float*, int, const std::int8_t*, int,
                         const float*, const float*, const std::int16_t*, float*, int, __mmask16);
constexpr int max_rows = 8;
constexpr rows_fn rows_of[2][max_rows + 1] = {
    {nullptr, vector_rows<1, false>, vector_rows<2, false>, vector_rows<3, false>, vector_rows<4, false>,
     vector_rows<5, false>, vector_rows<6, false>, vector_rows<7, false>, vector_rows<8, false>},
    {nullptr, vector_rows<1, true>, vector_rows<2, true>, vector_rows<3, true>, vector_rows<4, true>,
     vector_rows<5, true>, vector_rows<6, true>, vector_rows<7, true>, vector_rows<8, true>}};

void vector_matmul(weight_type type, const q8_activations& x, int n, const std::uint8_t* w, std::size_t row,
                   float* y, int ldy) {
  const int groups = x.k / group;
  const bool six = type == weight_type::q6_k;
  const int scales = six ? 2 * groups : groups;  // A per block, or per half for q6_K
  thread_local std::vector<std::uint8_t> u, pk;
  thread_local std::vector<float> a, b, pa, pb;
  u.resize(static_cast<std::size_t>(x.k));
  a.resize(static_cast<std::size_t>(scales));
  b.resize(static_cast<std::size_t>(groups));
  pk.resize(static_cast<std::size_t>(groups) * 512);
  pa.resize(static_cast<std::size_t>(scales) * panel);
  pb.resize(static_cast<std::size_t>(groups) * panel);
  for (int r0 = 0; r0 < n; r0 += panel) {
    const int rows = std::min(panel, n - r0);
    // A full panel writes every byte below; only a short last one leaves rows to clear (their
    // lanes are masked out of y, and zeros keep them finite).
    if (rows < panel) {
      std::fill(pk.begin(), pk.end(), std::uint8_t{0});
      std::fill(pa.begin(), pa.end(), 0.0f);
      std::fill(pb.begin(), pb.end(), 0.0f);
    }
    for (int r = 0; r < rows; ++r) {
      unpack_row(type, w + row * static_cast<std::size_t>(r0 + r), x.k, u.data(), a.data(), b.data());
      for (int g = 0; g < groups; ++g) {
        for (int t = 0; t < 8; ++t)
          std::memcpy(pk.data() + static_cast<long>(g) * 512 + 64 * t + 4 * r, u.data() + group * g + 4 * t,
                      4);
        if (!six) pb[static_cast<std::size_t>(panel * g + r)] = b[static_cast<std::size_t>(g)];
      }
      for (int j = 0; j < scales; ++j)
        pa[static_cast<std::size_t>(panel * j + r)] = a[static_cast<std::size_t>(j)];
    }
    const auto cols = static_cast<__mmask16>((1u << rows) - 1u);
    for (int i = 0; i < x.m; i += max_rows) {
      const int take = std::min(max_rows, x.m - i);
      rows_of[six][take](
          pk.data(), pa.data(), pb.data(), groups, x.q.data() + static_cast<long>(i) * x.k, x.k,
          x.d.data() + static_cast<long>(i) * groups, x.c.data() + static_cast<long>(i) * groups,
          x.s.data() + static_cast<long>(i) * 2 * groups, y + static_cast<long>(i) * ldy + r0, ldy, cols);
    }
  }
}

// The form for a few activation rows (a decode step, a decode batch, a verify round), where
// unpacking a panel once per product would cost more than the product: each weight row's block
// is unpacked into one 32-byte register, multiplied into each activation row's block (eight
// partial sums), and the partial sums of the panel's 16 weight rows are added into one vector of
// 16 block sums, the same integers the panel form sums. The blocks' A and B, and the two fused
// multiply-adds, are the panel form's, so the bits are too.
template <weight_type type>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma"), always_inline)) inline __m256i
group_bytes(const std::uint8_t* row, int g) {
  constexpr int bb = block_bytes(type);
  switch (type) {
    case weight_type::q8_0: {
      const std::uint8_t* blk = row + static_cast<long>(g) * bb;
      return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)),
                              _mm256_set1_epi8(-128));
    }
    case weight_type::q4_0: {
      const std::uint8_t* blk = row + static_cast<long>(g) * bb;
      const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
      const __m128i low = _mm_and_si128(qs, _mm_set1_epi8(0x0f));
      const __m128i high = _mm_and_si128(_mm_srli_epi16(qs, 4), _mm_set1_epi8(0x0f));
      return _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1);
    }
    case weight_type::q6_k: {  // unpack_row's layout; A from q6_scales, once per super-block
      const std::uint8_t* blk = row + static_cast<long>(g / 8) * bb;
      const int s = g % 8, hh = s / 4, t = s % 4;
      __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * hh + 32 * (t & 1)));
      if (t >= 2) q = _mm256_srli_epi16(q, 4);
      q = _mm256_and_si256(q, _mm256_set1_epi8(0x0f));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * hh));
      const __m256i top = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * t), _mm256_set1_epi8(3));
      return _mm256_or_si256(q, _mm256_slli_epi16(top, 4));
    }
    default: {  // q4_K, q5_K: A and B come from k_scales, once per super-block
      const std::uint8_t* blk = row + static_cast<long>(g / 8) * bb;
      const int s = g % 8, c = s / 2;
      const bool five = type == weight_type::q5_k;
      const std::uint8_t* qs = five ? blk + 48 : blk + 16;
      __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
      if (s % 2 == 1) q = _mm256_srli_epi16(q, 4);
      q = _mm256_and_si256(q, _mm256_set1_epi8(0x0f));
      if (five) {
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16));
        const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(qh, s), _mm256_set1_epi8(1));
        q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
      }
      return q;
    }
  }
}

// The 4 bytes at p of each of `rows` weight rows `row` bytes apart, as lane r (0 past `rows`).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"), always_inline)) inline __m512i
gather_rows(const std::uint8_t* p, std::size_t row, int rows) {
  const __m512i at =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(row)));
  return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), static_cast<__mmask16>((1u << rows) - 1u), at, p,
                                     1);
}

// A K type's A and B for the 8 blocks of super-block `sb` of `rows` weight rows (rows `row`
// bytes apart from w), the products unpack_row forms, 16 rows at once (lane r: row r; zero past
// `rows`): a[s], b[s]. The halves convert exactly (vcvtph2ps), the 6-bit scales and mins as
// k_scale_min unpacks them.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"))) void k_scales(
    weight_type type, const std::uint8_t* w, std::size_t row, int rows, int sb, __m512* a, __m512* b) {
  const std::uint8_t* base = w + static_cast<long>(sb) * block_bytes(type);
  const __m512i head = gather_rows(base, row, rows), s0 = gather_rows(base + 4, row, rows);
  const __m512i s1 = gather_rows(base + 8, row, rows), s2 = gather_rows(base + 12, row, rows);
  const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head));
  const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(head, 16)));
  const __m512i six = _mm512_set1_epi32(63), four = _mm512_set1_epi32(15),
                sign = _mm512_set1_epi32(INT32_MIN);
  for (int j = 0; j < 8; ++j) {
    const int byte = 8 * (j % 4);
    const __m512i b0 = _mm512_and_si512(_mm512_srli_epi32(s0, byte), _mm512_set1_epi32(0xff));
    const __m512i b1 = _mm512_and_si512(_mm512_srli_epi32(s1, byte), _mm512_set1_epi32(0xff));
    __m512i sc, m;
    if (j < 4) {
      sc = _mm512_and_si512(b0, six);
      m = _mm512_and_si512(b1, six);
    } else {
      const __m512i b2 = _mm512_and_si512(_mm512_srli_epi32(s2, byte), _mm512_set1_epi32(0xff));
      sc = _mm512_or_si512(_mm512_and_si512(b2, four), _mm512_slli_epi32(_mm512_srli_epi32(b0, 6), 4));
      m = _mm512_or_si512(_mm512_srli_epi32(b2, 4), _mm512_slli_epi32(_mm512_srli_epi32(b1, 6), 4));
    }
    a[j] = _mm512_mul_ps(d, _mm512_maskz_cvtepi32_ps(0xffff, sc));
    b[j] = _mm512_castsi512_ps(_mm512_xor_si512(
        _mm512_castps_si512(_mm512_mul_ps(dmin, _mm512_maskz_cvtepi32_ps(0xffff, m))), sign));
  }
}

// Q6_K's A for the 16 scales of super-block `sb` of `rows` weight rows, 16 rows at once as
// k_scales: a[j] = d * scales[j], unpack_row's products. d is read as the top half of the 4 bytes
// before the block's end (the gather reads 4 bytes, and d is the block's last 2).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"))) void q6_scales(
    const std::uint8_t* w, std::size_t row, int rows, int sb, __m512* a) {
  const std::uint8_t* base = w + static_cast<long>(sb) * block_bytes(weight_type::q6_k);
  const __m512 d =
      _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(gather_rows(base + 206, row, rows), 16)));
  for (int c = 0; c < 4; ++c) {
    const __m512i four = gather_rows(base + 192 + 4 * c, row, rows);
    for (int j = 0; j < 4; ++j) {
      // byte j, sign-extended: to the top, then an arithmetic shift down
      const __m512i sc = _mm512_srai_epi32(_mm512_slli_epi32(four, 24 - 8 * j), 24);
      a[4 * c + j] = _mm512_mul_ps(d, _mm512_maskz_cvtepi32_ps(0xffff, sc));
    }
  }
}

// Q8_0's or Q4_0's A and B for block g of `rows` weight rows, 16 rows at once as k_scales.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"))) void d_scales(
    weight_type type, const std::uint8_t* w, std::size_t row, int rows, int g, __m512* a, __m512* b) {
  const __m512i head = gather_rows(w + static_cast<long>(g) * block_bytes(type), row, rows);
  *a = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head));
  *b = _mm512_mul_ps(_mm512_set1_ps(type == weight_type::q8_0 ? -128.0f : -8.0f), *a);
}

// Four weight rows' eight partial sums each, added into each row's sum: lane r of the result.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma"))) inline __m128i sum_four(__m256i p0,
                                                                                                 __m256i p1,
                                                                                                 __m256i p2,
                                                                                                 __m256i p3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// The same with each row's first four partial sums (the block's first 16 values) and last four
// kept apart: lane r of *lo, of *hi.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma"))) inline void sum_four_halves(
    __m256i p0, __m256i p1, __m256i p2, __m256i p3, __m128i* lo, __m128i* hi) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
  *lo = _mm256_castsi256_si128(h);
  *hi = _mm256_extracti128_si256(h, 1);
}

template <weight_type type, int R>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma"))) void few_rows(
    const std::uint8_t* w, std::size_t row, int rows, const q8_activations& x, int i0, float* y, int ldy) {
  const int groups = x.k / group;
  const auto cols = static_cast<__mmask16>((1u << rows) - 1u);
  // The next panel's bytes are fetched into the cache while this one is multiplied, a share per
  // block: the panel's 16 rows are 16 short streams, too short for the CPU's prefetchers to
  // follow when a row is a few hundred bytes (measured: a 248,320 x 1,024 Q8_0 product, one row,
  // ran at 8 G weights/s without this and 11.7 with the row kernels).
  const std::uint8_t* next = w + row * static_cast<std::size_t>(panel);
  const std::size_t span = row * static_cast<std::size_t>(panel);
  __m512 f[R];
  for (int r = 0; r < R; ++r) f[r] = _mm512_setzero_ps();
  __m512 ka[16], kb[8];
  constexpr bool k_type = type == weight_type::q4_k || type == weight_type::q5_k;
  constexpr bool six = type == weight_type::q6_k;
  for (int g = 0; g < groups; ++g) {
    for (std::size_t at =
             span * static_cast<std::size_t>(g) / static_cast<std::size_t>(groups) & ~std::size_t{63};
         at < span * static_cast<std::size_t>(g + 1) / static_cast<std::size_t>(groups); at += 64)
      _mm_prefetch(reinterpret_cast<const char*>(next + at), _MM_HINT_T0);
    if (k_type && g % 8 == 0) k_scales(type, w, row, rows, g / 8, ka, kb);
    if (six && g % 8 == 0) q6_scales(w, row, rows, g / 8, ka);
    __m512 av = _mm512_setzero_ps(), bv = _mm512_setzero_ps();  // q6_K: ka per half, below
    if (k_type) {
      av = ka[g % 8];
      bv = kb[g % 8];
    } else if (!six) {
      d_scales(type, w, row, rows, g, &av, &bv);
    }
    __m256i u[panel];
    for (int r = 0; r < panel; ++r)
      u[r] = r < rows ? group_bytes<type>(w + row * static_cast<std::size_t>(r), g) : _mm256_setzero_si256();
    for (int i = 0; i < R; ++i) {
      const long at = static_cast<long>(i0 + i) * x.k + group * g;
      const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q.data() + at));
      __m256i p[panel];
      for (int r = 0; r < panel; ++r) p[r] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u[r], qv);
      const long dc = static_cast<long>(i0 + i) * groups + g;
      if constexpr (six) {
        __m128i lo[4], hi[4];
        for (int c = 0; c < 4; ++c)
          sum_four_halves(p[4 * c], p[4 * c + 1], p[4 * c + 2], p[4 * c + 3], &lo[c], &hi[c]);
        const __m512i sums[2] = {
            _mm512_inserti32x4(
                _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(lo[0]), lo[1], 1), lo[2], 2),
                lo[3], 3),
            _mm512_inserti32x4(
                _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(hi[0]), hi[1], 1), hi[2], 2),
                hi[3], 3)};
        const __m512 dv = _mm512_set1_ps(x.d[static_cast<std::size_t>(dc)]);
        for (int h = 0; h < 2; ++h) {
          const __m512i acc =
              _mm512_sub_epi32(sums[h], _mm512_set1_epi32(32 * x.s[static_cast<std::size_t>(2 * dc + h)]));
          const __m512 scaled = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xffff, acc), ka[2 * (g % 8) + h]);
          f[i] = _mm512_fmadd_ps(scaled, dv, f[i]);
        }
        continue;
      }
      const __m512i acc = _mm512_inserti32x4(
          _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(sum_four(p[0], p[1], p[2], p[3])),
                                                sum_four(p[4], p[5], p[6], p[7]), 1),
                             sum_four(p[8], p[9], p[10], p[11]), 2),
          sum_four(p[12], p[13], p[14], p[15]), 3);
      const __m512 scaled = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xffff, acc), av);
      f[i] = _mm512_fmadd_ps(scaled, _mm512_set1_ps(x.d[static_cast<std::size_t>(dc)]), f[i]);
      f[i] = _mm512_fmadd_ps(bv, _mm512_set1_ps(x.c[static_cast<std::size_t>(dc)]), f[i]);
    }
  }
  for (int i = 0; i < R; ++i) _mm512_mask_storeu_ps(y + static_cast<long>(i0 + i) * ldy, cols, f[i]);
}

constexpr int few_max = 4;  // activation rows per few_rows pass over a panel
// Up to this many rows take few_rows, a pass per four: below it, unpacking a panel for the panel
// form costs more than passing over the weights again (measured: 8 rows, q8_0 4,096 x 4,096, one
// core, 15.6 G weight-rows/s in the panel form against 37 for 4 rows in few_rows).
constexpr int few_rows_max = 12;

template <weight_type type>
void few_matmul(const q8_activations& x, int n, const std::uint8_t* w, std::size_t row, float* y, int ldy) {
  for (int r0 = 0; r0 < n; r0 += panel) {
    const int rows = std::min(panel, n - r0);
    const std::uint8_t* wp = w + row * static_cast<std::size_t>(r0);
    for (int i = 0; i < x.m; i += few_max) {
      switch (std::min(few_max, x.m - i)) {
        case 1:
          few_rows<type, 1>(wp, row, rows, x, i, y + r0, ldy);
          break;
        case 2:
          few_rows<type, 2>(wp, row, rows, x, i, y + r0, ldy);
          break;
        case 3:
          few_rows<type, 3>(wp, row, rows, x, i, y + r0, ldy);
          break;
        default:
          few_rows<type, 4>(wp, row, rows, x, i, y + r0, ldy);
      }
    }
  }
}

void few_matmul(weight_type type, const q8_activations& x, int n, const std::uint8_t* w, std::size_t row,
                float* y, int ldy) {
  switch (type) {
    case weight_type::q8_0:
      return few_matmul<weight_type::q8_0>(x, n, w, row, y, ldy);
    case weight_type::q4_0:
      return few_matmul<weight_type::q4_0>(x, n, w, row, y, ldy);
    case weight_type::q4_k:
      return few_matmul<weight_type::q4_k>(x, n, w, row, y, ldy);
    case weight_type::q6_k:
      return few_matmul<weight_type::q6_k>(x, n, w, row, y, ldy);
    default:
      return few_matmul<weight_type::q5_k>(x, n, w, row, y, ldy);
  }
}

}  // namespace

bool int8_reads(weight_type t) {
  return t == weight_type::q8_0 || t == weight_type::q4_0 || t == weight_type::q4_k ||
         t == weight_type::q5_k || t == weight_type::q6_k;
}

bool int8_vectors() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vnni");
  return yes;
}

void int8_matmul(weight_type type, const q8_activations& x, int n, const void* w, float* y, int ldy,
                 bool plain) {
  assert(int8_reads(type) && n >= 0 && x.k % block_elements(type) == 0 && (x.m <= 1 || ldy >= n));
  assert(x.s.size() * half == x.q.size());
  if (x.m == 0 || n == 0) return;
  const auto row = static_cast<std::size_t>(row_bytes(type, x.k).value_or(0));
  const auto* p = static_cast<const std::uint8_t*>(w);
  assert(row * panel < (std::size_t{1} << 31));  // the gathers' offsets are 32-bit
  if (plain || !int8_vectors())
    plain_matmul(type, x, n, p, row, y, ldy);
  else if (x.m <= few_rows_max)
    few_matmul(type, x, n, p, row, y, ldy);
  else
    vector_matmul(type, x, n, p, row, y, ldy);
}

}  // namespace anchorage::kernels::cpu
