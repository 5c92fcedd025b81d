#include "kernels/int8_matmul.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/exact_intrinsics.hpp"
#include "kernels/dequantize.hpp"
#include "kernels/quantize.hpp"

// The activations' rounding for int8_matmul (kernels/int8_matmul.hpp): quantize_activations and
// its parts, in a plain form and a vector form with the same bits.

namespace anchorage::kernels::cpu {
namespace {

constexpr int group = 32;  // values per block of an activation row (one scale)
constexpr int half = 16;   // values per sum s (a Q6_K scale's span)

// One block of 32 values: its q, and its scale and sum (the stored scale's d and c).
void plain_block(const float* v, std::int8_t* q, float& dh, float& c, std::int16_t* s) {
  float amax = 0.0f;
  for (int e = 0; e < group; ++e) amax = std::max(amax, std::fabs(v[e]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  std::int32_t sum = 0, halves[2] = {0, 0};
  for (int e = 0; e < group; ++e) {
    // |v * id| <= 127 for finite values; an infinite or NaN activation (a broken model) gives 0.
    const float r = std::round(v[e] * id);
    q[e] = static_cast<std::int8_t>(r >= 127.0f ? 127.0f : r <= -127.0f ? -127.0f : r == r ? r : 0.0f);
    sum += q[e];
    halves[e / half] += q[e];
  }
  s[0] = static_cast<std::int16_t>(halves[0]);
  s[1] = static_cast<std::int16_t>(halves[1]);
  dh = f16_to_f32(f32_to_f16(d));  // the scale Q8_0 stores
  c = dh * static_cast<float>(sum);
}

// plain_block's bits in vectors: the same max (a NaN value ignored, as std::max(amax, NaN) keeps
// amax), the same division and product, roundf as a truncation plus one where the part cut off
// is at least a half (exact: x - trunc(x) is representable), the same clamp.
__attribute__((target("avx512f,avx512bw"), always_inline)) inline __m512i vector_half(__m512 v, __m512 id,
                                                                                      std::int8_t* q) {
  const __m512 x = _mm512_mul_ps(v, id);
  __m512 r = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 cut = _mm512_abs_ps(_mm512_sub_ps(x, r));
  const __mmask16 up = _mm512_cmp_ps_mask(cut, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 one = _mm512_set1_ps(1.0f);
  r = _mm512_mask_add_ps(r, static_cast<__mmask16>(up & ~neg), r, one);
  r = _mm512_mask_sub_ps(r, static_cast<__mmask16>(up & neg), r, one);
  r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, r, _CMP_ORD_Q), r);  // NaN: 0
  r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  const __m512i n = _mm512_cvtps_epi32(r);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(n));
  return n;
}

__attribute__((target("avx512f,avx512bw"))) void vector_block(const float* v, std::int8_t* q, float& dh,
                                                              float& c, std::int16_t* s) {
  const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
  // max(|x|, acc): a NaN |x| gives acc (the second operand), as std::max does.
  const __m512 m = _mm512_max_ps(_mm512_abs_ps(v1), _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps()));
  const float amax = _mm512_reduce_max_ps(m);
  const float d = amax / 127.0f;
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  const __m512 id = _mm512_set1_ps(inv);
  const __m512i n0 = vector_half(v0, id, q), n1 = vector_half(v1, id, q + 16);
  const std::int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(n0, n1));
  s[0] = static_cast<std::int16_t>(_mm512_reduce_add_epi32(n0));
  s[1] = static_cast<std::int16_t>(_mm512_reduce_add_epi32(n1));
  dh = f16_to_f32(f32_to_f16(d));
  c = dh * static_cast<float>(sum);
}

}  // namespace

void size_activations(int m, int k, q8_activations& out) {
  assert(m >= 0 && k >= 0 && k % group == 0);
  out.m = m;
  out.k = k;
  out.q.resize(static_cast<std::size_t>(m) * static_cast<std::size_t>(k));
  out.d.resize(static_cast<std::size_t>(m) * static_cast<std::size_t>(k / group));
  out.c.resize(out.d.size());
  out.s.resize(2 * out.d.size());
}

void quantize_rows(int i0, int i1, const float* x, int ldx, q8_activations& out, bool plain) {
  assert(0 <= i0 && i0 <= i1 && i1 <= out.m && (out.m <= 1 || ldx >= out.k));
  const int k = out.k, groups = k / group;
  const bool vectors = !plain && int8_vectors();
  for (int i = i0; i < i1; ++i)
    for (int g = 0; g < groups; ++g) {
      const float* v = x + static_cast<long>(i) * ldx + group * g;
      std::int8_t* q = out.q.data() + static_cast<long>(i) * k + group * g;
      const std::size_t at = static_cast<std::size_t>(i) * groups + g;
      if (vectors)
        vector_block(v, q, out.d[at], out.c[at], out.s.data() + 2 * at);
      else
        plain_block(v, q, out.d[at], out.c[at], out.s.data() + 2 * at);
    }
}

void quantize_activations(int m, int k, const float* x, int ldx, q8_activations& out, bool plain) {
  size_activations(m, k, out);
  quantize_rows(0, m, x, ldx, out, plain);
}

}  // namespace anchorage::kernels::cpu
