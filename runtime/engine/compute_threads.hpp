#pragma once
#include <optional>
#include <string>
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

// How the products by a matrix kept in a block type kernels::cpu::int8_reads names (Q8_0, Q4_0,
// Q4_K, Q5_K, Q6_K) take their activations (--activations), in both of runtime/engine/engine_linear's
// forms (a prefill chunk's, and a decode's, a decode batch's or a verify round's rows):
//   f32: as they are: the row kernels (quant_matmul) and dequantized panels by BLAS's gemm;
//   q8:  rounded to 8 bits per block of 32 and multiplied as integers (kernels/int8_matmul.hpp),
//        as llama.cpp's CPU path does. Each output has the bits of its own activation row and
//        weight row alone, on every CPU and in every form: a decode's rows are a prefill's.
//        With AVX-512 VNNI, 1.9 to 2.9 times the row kernels' speed for one row and 2.9 to 3.7
//        times for a prefill chunk; without it, a plain loop far slower than f32.
// "auto" is q8 where the CPU has AVX-512 VNNI and f32 elsewhere. The default is f32: a restore at a
// line is a cold prefill's bits under both, but a session resume (an end anchor, a snapshot, the
// spill: rows a decode or an off-grid prefill wrote) differs from a cold prefill in the last bits,
// and rounding to 8 bits turns a last-bit difference into a step of 1/254 of a block's largest
// value now and then, so its greedy tokens part from a cold server's far more often than with
// float activations (on the tiny random-weight models of the tests: within a few turns). An engine
// keeps the setting it was built under (its fingerprint names q8); set it before building engines.
enum class product_activations { f32, q8, automatic };
// The setting, as --activations names it ("f32", "q8", "auto"); nullopt for any other name.
std::optional<product_activations> product_activations_named(const std::string& name);
void set_product_activations(product_activations a);
// What the products use now: f32 or q8 (automatic resolved for this CPU).
product_activations current_product_activations();
const char* to_string(product_activations a);

}  // namespace anchorage
