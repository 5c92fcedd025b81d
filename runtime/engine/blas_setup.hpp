#pragma once

namespace anchorage {

// OpenBLAS picks its kernels for the CPU model at load time; on CPUs it does not know (many
// virtual machines report a bare "Intel Xeon Processor") it falls back to its SSE3 kernels,
// about three times slower here. Call first thing in main(): when OPENBLAS_CORETYPE is unset,
// it sets it from the CPU's features (SkylakeX with AVX-512, Haswell with AVX2) and re-executes
// the program once so the library loads with it. The chosen core is part of the state
// fingerprint (kernels::arithmetic_flags), since it changes the arithmetic.
void select_blas_core(char** argv);

}  // namespace anchorage
