#include "runtime/engine/blas_setup.hpp"

#include <unistd.h>

#include <cstdlib>

namespace anchorage {

void select_blas_core(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const char* core = nullptr;
  if (__builtin_cpu_supports("avx512f"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2"))
    core = "Haswell";
  if (core == nullptr) return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on with the default core
}

}  // namespace anchorage
