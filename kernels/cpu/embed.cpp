#include "kernels/embed.hpp"

#include <cstring>

namespace anchorage::kernels::cpu {

void embed(const std::int32_t* ids, const float* table, float* out, int rows, int dim) {
  for (int r = 0; r < rows; ++r)
    std::memcpy(out + static_cast<long>(r) * dim, table + static_cast<long>(ids[r]) * dim,
                sizeof(float) * static_cast<std::size_t>(dim));
}

}  // namespace anchorage::kernels::cpu
