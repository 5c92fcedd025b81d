#pragma once
// Guards that set the engine's process-wide product settings (runtime/engine/compute_threads.hpp)
// for one test's engines and put the defaults back after.
#include "runtime/engine/compute_threads.hpp"

namespace anchorage::testing {

// --activations: q8 or f32, then what it was.
struct activations_as {
  explicit activations_as(product_activations a) : before(current_product_activations()) {
    set_product_activations(a);
  }
  ~activations_as() { set_product_activations(before); }
  activations_as(const activations_as&) = delete;
  activations_as& operator=(const activations_as&) = delete;
  product_activations before;
};

// --threads: n, then what it was.
struct threads_as {
  explicit threads_as(int n) : before(compute_threads()) { set_compute_threads(n); }
  ~threads_as() { set_compute_threads(before); }
  threads_as(const threads_as&) = delete;
  threads_as& operator=(const threads_as&) = delete;
  int before;
};

}  // namespace anchorage::testing
