#pragma once
#include "kernels/add.hpp"
#include "kernels/attention.hpp"
#include "kernels/block_checksum.hpp"
#include "kernels/causal_conv1d.hpp"
#include "kernels/device.hpp"
#include "kernels/embed.hpp"
#include "kernels/gated_rmsnorm.hpp"
#include "kernels/gdn_chunk.hpp"
#include "kernels/gdn_gates.hpp"
#include "kernels/gdn_step.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_rows.hpp"
#include "kernels/l2norm.hpp"
#include "kernels/rmsnorm.hpp"
#include "kernels/rope.hpp"
#include "kernels/rope_multi.hpp"
#include "kernels/sigmoid_gate.hpp"
#include "kernels/swiglu.hpp"

namespace anchorage::kernels {

// The op table of one backend: the engine calls ops through it, so one engine source runs on
// either backend over memory from device_alloc().
struct ops {
  backend where;
  decltype(&cpu::gemm) gemm;
  decltype(&cpu::rmsnorm) rmsnorm;
  decltype(&cpu::gated_rmsnorm) gated_rmsnorm;
  decltype(&cpu::rope) rope;
  decltype(&cpu::sigmoid_gate) sigmoid_gate;
  decltype(&cpu::swiglu) swiglu;
  decltype(&cpu::causal_conv1d) causal_conv1d;
  decltype(&cpu::l2norm) l2norm;
  decltype(&cpu::gdn_gates) gdn_gates;
  decltype(&cpu::gdn_chunk) gdn_chunk;
  decltype(&cpu::gdn_step) gdn_step;
  decltype(&cpu::attention) attention;
  decltype(&cpu::embed) embed;
  decltype(&cpu::add) add;
  decltype(&cpu::block_checksum) block_checksum;
  decltype(&cpu::gemm_rows) gemm_rows;
  decltype(&cpu::rope_multi) rope_multi;
};

// The table for `b`. Asking for cuda when !cuda_available() is a programmer error.
const ops& ops_for(backend b);

// Names the arithmetic for the state fingerprint: backend, float32, BLAS library and config.
std::string arithmetic_flags(backend b);

}  // namespace anchorage::kernels
