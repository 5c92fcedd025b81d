// The test binary's main: the BLAS core is chosen as in the server and tools (see
// runtime/engine/blas_setup.hpp), so traces recorded by the server replay with the same arithmetic.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "runtime/engine/blas_setup.hpp"

int main(int argc, char** argv) {
  anchorage::select_blas_core(argv);
  return Catch::Session().run(argc, argv);
}
