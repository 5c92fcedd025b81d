// The stored-weight products on one core: kernels::cpu::quant_matmul (float activations) against
// kernels::cpu::int8_matmul with its activations' rounding (quantize_activations, counted in its
// time), per block type and activation row count, on an n x k matrix of random weights. Prints
// one JSON object: weight-rows per second (n * k * m / s, the best of --repeat runs) of each and
// their ratio. Usage:
//   anchorage-bench-kernels [--n 4096] [--k 4096] [--rows 1,4,64] [--repeat 5]
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/int8_matmul.hpp"
#include "kernels/quant_matmul.hpp"
#include "kernels/quantize.hpp"
#include "tools/bench_common.hpp"

using namespace anchorage;
using namespace anchorage::kernels;

namespace {

template <class F>
double best_seconds(int repeat, F&& f) {
  double best = 1e30;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 4096, k = 4096, repeat = 5;
  std::vector<int> rows = {1, 4, 64};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--n")
      n = std::stoi(v);
    else if (a == "--k")
      k = std::stoi(v);
    else if (a == "--rows")
      rows = bench::parse_list(v);
    else if (a == "--repeat")
      repeat = std::stoi(v);
    else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  if (k % 256 != 0 || n < 1 || repeat < 1) {
    std::cerr << "--k must be a multiple of 256, --n and --repeat at least 1\n";
    return 2;
  }
  nlohmann::json out = {
      {"n", n}, {"k", k}, {"int8_vectors", cpu::int8_vectors()}, {"types", nlohmann::json::object()}};
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (weight_type t :
       {weight_type::q8_0, weight_type::q4_0, weight_type::q4_k, weight_type::q5_k, weight_type::q6_k}) {
    const auto rb = static_cast<std::size_t>(*row_bytes(t, k));
    std::vector<std::uint8_t> w(rb * static_cast<std::size_t>(n));
    std::vector<float> v(static_cast<std::size_t>(k));
    for (int r = 0; r < n; ++r) {
      for (float& e : v) e = nd(rng);
      quantize_row(t, v.data(), w.data() + rb * static_cast<std::size_t>(r), k);
    }
    nlohmann::json per = nlohmann::json::array();
    for (int m : rows) {
      std::vector<float> x(static_cast<std::size_t>(m) * k), y(static_cast<std::size_t>(m) * n);
      for (float& e : x) e = nd(rng);
      cpu::q8_activations q;
      const double f =
          best_seconds(repeat, [&] { cpu::quant_matmul(t, m, n, k, x.data(), k, w.data(), y.data(), n); });
      const double i8 = best_seconds(repeat, [&] {
        cpu::quantize_activations(m, k, x.data(), k, q);
        cpu::int8_matmul(t, q, n, w.data(), y.data(), n);
      });
      const double work = static_cast<double>(n) * k * m;
      per.push_back({{"rows", m},
                     {"quant_matmul_g_per_s", work / f / 1e9},
                     {"int8_matmul_g_per_s", work / i8 / 1e9},
                     {"ratio", f / i8}});
    }
    out["types"][weight_type_name(t)] = per;
  }
  std::cout << out.dump() << "\n";
}
