#pragma once
// How many of the machine's cores the engine's products use (--threads): the stored products'
// pool of row splitters (runtime/engine/engine_linear.cpp) and OpenBLAS's own threads. Results do
// not depend on it: the stored products give every row the same bits however the rows are split,
// and OpenBLAS's products do not change with its thread count here (the tests' and CI's pinned
// core); the state fingerprint does not include it.
namespace anchorage {

// n >= 1; values above the machine's cores use every core. Before any engine runs, or between
// products (it takes effect at the next product).
void set_compute_threads(int n);
// The current setting: the machine's cores unless set.
int compute_threads();

}  // namespace anchorage
