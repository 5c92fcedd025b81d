#pragma once
#include <cstdint>
#include "kernels/op.hpp"
// out[r] = table[ids[r]] (rows of dim floats). ids must be < the table's rows (callers check).
ANCHORAGE_OP(void, embed, (const std::int32_t* ids, const float* table, float* out, int rows, int dim))
