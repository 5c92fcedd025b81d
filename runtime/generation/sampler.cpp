#include "runtime/generation/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace anchorage {
namespace {

std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

double step_uniform(std::uint64_t seed, std::uint64_t step) {
  const std::uint64_t z = mix64(mix64(seed + 0x9e3779b97f4a7c15ULL) ^ (step * 0xd1b54a32d192ed03ULL));
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
}

token_id sample_token(const std::vector<float>& raw, const sampling_params& p, std::uint64_t step) {
  if (raw.empty()) throw std::invalid_argument("no logits to sample from");
  if (!(p.temperature >= 0.0f)) throw std::invalid_argument("temperature must be >= 0");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) throw std::invalid_argument("top_p must be in (0, 1]");
  const int n = static_cast<int>(raw.size());
  std::vector<float> biased;
  if (!p.logit_bias.empty()) {
    biased = raw;
    for (const auto& [id, bias] : p.logit_bias) {
      if (id < 0 || id >= n)
        throw std::invalid_argument("logit_bias names id " + std::to_string(id) + " outside the logits");
      biased[static_cast<std::size_t>(id)] += bias;
    }
  }
  const std::vector<float>& logits = p.logit_bias.empty() ? raw : biased;
  const int limit = p.allowed ? std::min(n, static_cast<int>(p.allowed->size())) : n;
  const auto allowed = [&](int i) { return !p.allowed || (*p.allowed)[static_cast<std::size_t>(i)]; };
  if (p.temperature == 0.0f) {
    int best = -1;
    for (int i = 0; i < limit; ++i)
      if (allowed(i) && (best < 0 || logits[i] > logits[best])) best = i;
    if (best < 0) throw std::invalid_argument("the sampling mask allows none of the logits' ids");
    return best;
  }
  // The candidate ids, ascending: all of them, or those the mask allows.
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(limit));
  for (int i = 0; i < limit; ++i)
    if (allowed(i)) order.push_back(i);
  if (order.empty()) throw std::invalid_argument("the sampling mask allows none of the logits' ids");
  const int m = static_cast<int>(order.size());
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  const double mx = logits[order[0]];
  std::vector<double> prob(static_cast<std::size_t>(m));
  double sum = 0.0;
  for (int i = 0; i < m; ++i) {
    prob[i] = std::exp((static_cast<double>(logits[order[i]]) - mx) / p.temperature);
    sum += prob[i];
  }
  int keep = m;
  double mass = 0.0;
  for (int i = 0; i < m; ++i) {
    mass += prob[i] / sum;
    if (mass >= p.top_p) {
      keep = i + 1;
      break;
    }
  }
  double kept = 0.0;
  for (int i = 0; i < keep; ++i) kept += prob[i];
  const double u = step_uniform(p.seed, step) * kept;
  double acc = 0.0;
  for (int i = 0; i < keep; ++i) {
    acc += prob[i];
    if (u < acc) return order[i];
  }
  return order[keep - 1];
}

}  // namespace anchorage
