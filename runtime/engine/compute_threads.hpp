#pragma once
// How many of the machine's cores the engine's products use (--threads): the pool of row and
// panel splitters in runtime/engine/engine_linear.cpp; BLAS itself always runs on one thread.
// Results do not depend on it: the row products give every row the same bits however the rows
// are split, and the BLAS products are split at fixed panels, never by BLAS's own threads (which,
// with OpenBLAS's Haswell kernels, change the bits with their count); the state fingerprint does
// not include it, so a cache written under one --threads is read under another.
namespace anchorage {

// n >= 1; values above the machine's cores use every core. Before any engine runs, or between
// products (it takes effect at the next product).
void set_compute_threads(int n);
// The current setting: the machine's cores unless set.
int compute_threads();

}  // namespace anchorage
