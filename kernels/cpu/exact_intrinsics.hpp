#pragma once
// For the CPU kernels written in AVX-512 intrinsics whose vector form must give the plain form's
// bits (int8_activations.cpp, int8_matmul.cpp). Internal to kernels/cpu: a kernel's .cpp
// includes it before its own code, since its pragmas hold for the rest of the file.

// A product and a fused multiply-add stay what the code writes in both forms (GCC's default
// -ffp-contract=fast could fuse a plain multiply and add in one form and not the other).
#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge source of their
// unmasked forms, which its own -Wuninitialized then reports once inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
