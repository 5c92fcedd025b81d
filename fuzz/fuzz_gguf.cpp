// The GGUF reader (runtime/model/gguf_file.hpp) on any file: the header, the metadata and the
// tensor infos parsed, every tensor checked and read. It throws only model_load_error; every
// tensor it opens lies inside the file; a tensor it reads has its shape's count of values.
//
// ANCHORAGE_FUZZ_SEEDS=DIR writes seed files made by save_gguf there and exits.
#include <exception>

#include "fuzz/fuzz_support.hpp"
#include "runtime/model/gguf_file.hpp"
#include "runtime/model/loaded_model.hpp"

using namespace anchorage;

namespace {

void write_seeds(const std::string& dir) {
  tensor a{{2, 32}, {}}, b{{4, 256}, {}};
  for (int i = 0; i < 64; ++i) a.data.push_back(static_cast<float>(i) * 0.25f - 3.0f);
  for (int i = 0; i < 1024; ++i) b.data.push_back(static_cast<float>(i % 37) * 0.125f - 2.0f);
  const std::vector<std::pair<std::string, gguf_value>> meta = {
      {"general.architecture", gguf_value::str("qwen35")},
      {"general.alignment", gguf_value::u32(32)},
      {"qwen35.block_count", gguf_value::u32(2)},
      {"qwen35.rope.freq_base", gguf_value::f32(10000.0f)},
      {"tokenizer.ggml.tokens", gguf_value::str_array({"a", "b", "<|im_start|>"})},
      {"tokenizer.ggml.token_type", gguf_value::int_array(gguf_type::int32, {1, 1, 3})},
      {"general.flags", gguf_value::bool_array({true, false})},
  };
  save_gguf(dir + "/f32_f16", meta, {{"a", &a, ggml_type::f32}, {"a16", &a, ggml_type::f16}});
  save_gguf(dir + "/bf16_q8_0_q4_0", {meta[0]},
            {{"a", &a, ggml_type::bf16}, {"b8", &b, ggml_type::q8_0}, {"b4", &b, ggml_type::q4_0}});
  save_gguf(dir + "/k_types", {},
            {{"k4", &b, ggml_type::q4_k}, {"k5", &b, ggml_type::q5_k}, {"k6", &b, ggml_type::q6_k}});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::memfd_file file(data, size);
  try {
    const gguf_reader r(file.path());
    for (const auto& info : r.tensors()) {
      fuzz::check(r.find_tensor(info.name) != nullptr, "every tensor is found by its name");
      try {
        r.check_readable(info);
        const tensor t = r.read(info.name);
        fuzz::check(static_cast<std::size_t>(t.numel()) == t.data.size(),
                    "a tensor read has its shape's values");
      } catch (const model_load_error&) {
      }
    }
  } catch (const model_load_error&) {
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::write_seeds_when_asked(write_seeds);
  return 0;
}
