#pragma once
#include <cstdint>
#include "kernels/op.hpp"
// Two 64-bit sums over rows [a, b) of a buffer of `row_bytes`-byte rows (row_bytes a multiple
// of 8). Over the range's 64-bit little-endian words w_0 .. w_{n-1} (counted from row a):
//   out[0] = sum w_i          (mod 2^64)
//   out[1] = sum (i + 1) * w_i (mod 2^64)
// Integer sums, so any reduction order gives the same result on every backend. The session
// spill uses them to skip blocks that did not change. `out` is host memory.
ANCHORAGE_OP(void, block_checksum, (const void* buf, long row_bytes, long a, long b, std::uint64_t* out))
