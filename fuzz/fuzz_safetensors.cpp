// The safetensors readers (runtime/model/safetensors.hpp, safetensors_view.hpp) on any file:
// safetensors_view::open and every entry read, and load_safetensors. They throw only
// safetensors_error; every entry lies inside the file; a tensor read has its shape's values.
//
// ANCHORAGE_FUZZ_SEEDS=DIR writes seed files made by save_safetensors there and exits.
#include <exception>

#include "fuzz/fuzz_support.hpp"
#include "runtime/model/safetensors.hpp"
#include "runtime/model/safetensors_view.hpp"

using namespace anchorage;

namespace {

void write_seeds(const std::string& dir) {
  tensor_map t;
  t["embed"] = {{4, 3}, {0.5f, -1.f, 2.f, 3.25f, 0.f, -0.f, 1e-3f, 7.f, 8.f, 9.f, 10.f, 11.f}};
  t["norm"] = {{3}, {1.f, 1.5f, -2.f}};
  t["scalar"] = {{}, {42.f}};
  t["empty"] = {{0, 5}, {}};
  save_safetensors(dir + "/f32", t, {{"format", "pt"}});
  safetensors_write_options half;
  half.dtype = safetensors_dtype::bf16;
  half.per_tensor["norm"] = safetensors_dtype::f16;
  save_safetensors(dir + "/bf16_f16", t, {}, half);
}

void check_tensor(const tensor& t) {
  fuzz::check(t.numel() >= 0 && static_cast<std::size_t>(t.numel()) == t.data.size(),
              "a tensor read has its shape's values");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::memfd_file file(data, size);
  try {
    const safetensors_view v = safetensors_view::open(file.path());
    for (const auto& e : v.entries()) {
      fuzz::check(e.begin <= e.end && e.end <= size, "an entry lies inside the file");
      if (!is_float_dtype(e.dtype)) continue;
      check_tensor(v.read(e));
    }
  } catch (const safetensors_error&) {
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  try {
    const safetensors_file f = load_safetensors(file.path());
    for (const auto& [name, t] : f.tensors) check_tensor(t);
  } catch (const safetensors_error&) {
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::write_seeds_when_asked(write_seeds);
  return 0;
}
