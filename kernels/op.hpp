#pragma once
// One declaration per op, two definitions: kernels/cpu/<op>.cpp and kernels/cuda/<op>.cu.
//
// ANCHORAGE_OP declares the same signature in anchorage::kernels::cpu and
// anchorage::kernels::cuda. Conventions for every op:
//  - float32, row-major; a "row" is one token; strides are counted in floats;
//  - cpu:: takes host pointers (or CUDA managed memory); cuda:: takes device or managed pointers
//    and returns after the work is queued on the default stream (kernels::device_sync() waits);
//  - every op is deterministic: the same inputs give the same bits, run after run (no atomics
//    in floating-point reductions, no reduction order that depends on timing).
#define ANCHORAGE_OP(ret, name, params) \
  namespace anchorage::kernels::cpu {   \
  ret name params;                      \
  }                                     \
  namespace anchorage::kernels::cuda {  \
  ret name params;                      \
  }
