#pragma once
#include <cstdint>
#include <cstring>

namespace anchorage::kernels::cpu {

// exp(x) for the softmax's hot loop: range reduction by ln 2 and a degree-6 polynomial, about
// 2 ulp from expf over [-87, 88], 0 below -87.3. Plain arithmetic with no library call, so the
// compiler vectorises loops over it; a pure function, so the same input gives the same bits.
inline float fast_exp(float in) {
  // branch-free clamps (selects), so loops over this vectorise
  const float lo = in < -87.3f ? -87.3f : in;
  const float x = lo > 88.7f ? 88.7f : lo;
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + shifter) - shifter;
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t e = (static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &e, sizeof scale);
  return p * scale;
}

}  // namespace anchorage::kernels::cpu

namespace anchorage::kernels::cpu {

// x * sigmoid(x) with fast_exp: vectorisable.
inline float fast_silu(float x) { return x / (1.0f + fast_exp(-x)); }

}  // namespace anchorage::kernels::cpu
