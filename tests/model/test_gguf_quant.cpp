// Tests for quantized GGUF files (runtime/model/gguf_file, qwen35_gguf): the exporter writes every
// type it offers with kernels::quantize_row and the loader gives back exactly
// dequantize_row(quantize_row(value)) for every tensor; Q4_K_M follows llama-quantize's choices;
// truncated, overlapping, unsupported-type and badly-blocked tensors are refused by name; a model
// loaded from a Q8_0 file computes the logits of an engine built from the dequantized weights.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/dequantize.hpp"
#include "kernels/quantize.hpp"
#include "kernels/weight_type.hpp"
#include "runtime/engine/engine_weights.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/model/gguf_file.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/qwen35_gguf.hpp"
#include "runtime/model/qwen35_gguf_tensors.hpp"
#include "runtime/model/qwen35_names.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/gguf_bytes.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using anchorage::testing::info_field;
using anchorage::testing::put_u32;
using anchorage::testing::slurp;
using anchorage::testing::spit;
using anchorage::testing::temp_dir;

namespace {

// values stored as `type` and read back: dequantize_row(quantize_row(row)) row by row along the
// last PyTorch dimension.
tensor round_trip(const tensor& t, ggml_type type) {
  const auto wt = *kernels::weight_type_from_ggml(static_cast<std::uint32_t>(type));
  const int ne0 = static_cast<int>(t.shape.back());
  const auto row = static_cast<std::size_t>(*kernels::row_bytes(wt, ne0));
  std::vector<unsigned char> buf(row);
  tensor out = t;
  for (std::size_t r = 0; r * static_cast<std::size_t>(ne0) < t.data.size(); ++r) {
    kernels::quantize_row(wt, t.data.data() + r * static_cast<std::size_t>(ne0), buf.data(), ne0);
    kernels::dequantize_row(wt, buf.data(), out.data.data() + r * static_cast<std::size_t>(ne0), ne0);
  }
  return out;
}

// qwen35-tiny widened so that every matrix's ne0 is a multiple of 256 (d_model, the MLP, the value
// heads, the attention output): the K types apply without fallback.

const std::vector<gguf_dtype>& all_dtypes() {
  static const std::vector<gguf_dtype> d = {
      gguf_dtype::f32,  gguf_dtype::f16,  gguf_dtype::bf16, gguf_dtype::q8_0,   gguf_dtype::q4_0,
      gguf_dtype::q4_k, gguf_dtype::q5_k, gguf_dtype::q6_k, gguf_dtype::q4_k_m, gguf_dtype::q5_k_m};
  return d;
}

// A two-tensor file: "norm" F32 [64] and "w" stored as `type` [rows, ne0], last in the file.
std::string write_pair(const temp_dir& d, const std::string& file, ggml_type type, std::int64_t rows,
                       std::int64_t ne0) {
  static tensor norm, w;
  norm.shape = {64};
  norm.data.assign(64, 0.5f);
  w.shape = {rows, ne0};
  w.data.resize(static_cast<std::size_t>(rows * ne0));
  for (std::size_t i = 0; i < w.data.size(); ++i) w.data[i] = 0.01f * static_cast<float>(i % 97) - 0.4f;
  const std::string path = d.file(file);
  save_gguf(path, {{"general.architecture", gguf_value::str("test")}},
            {{"norm", &norm, ggml_type::f32}, {"w", &w, type}});
  return path;
}

}  // namespace

TEST_CASE("gguf quant: every export type loads back as dequantize_row(quantize_row(value))", "[gguf]") {
  temp_dir d("gguf-quant");
  for (const model_config& c : {preset_config("qwen35-tiny"), testing::qwen35_wide_config(false),
                                testing::qwen35_wide_config(true)}) {
    const tensor_map w = random_weights(c, 11);
    const auto specs = qwen35_weight_specs(c);
    for (gguf_dtype dtype : all_dtypes()) {
      INFO(c.preset << " " << to_string(dtype));
      const std::string path = d.file(c.preset + "-" + to_string(dtype) + ".gguf");
      save_qwen35_gguf(path, c, w, nullptr, "", dtype);
      const gguf_reader r(path);
      CHECK(r.find("general.file_type")->i == llama_file_type(dtype));
      CHECK(r.find("general.quantization_version")->i == 2);
      loaded_model m = load_qwen35_gguf(path);
      convert_stored_to_f32(m);  // the values --weight-storage f32 loads (to_f32 of what is kept)
      REQUIRE(m.weights.size() == specs.size());
      int block_typed = 0;
      for (const auto& s : specs) {
        const std::string gname = qwen35_gguf_name(s.name, c);
        INFO(gname);
        const tensor stored = qwen35_to_gguf(s.name, w.at(s.name), c);
        const gguf_tensor_info* info = r.find_tensor(gname);
        REQUIRE(info != nullptr);
        const ggml_type type = qwen35_gguf_tensor_type(s.name, stored.shape, c, dtype);
        CHECK(info->type == static_cast<std::uint32_t>(type));
        block_typed += kernels::block_elements(*kernels::weight_type_from_ggml(info->type)) > 1 ? 1 : 0;
        const tensor want = round_trip(stored, type);
        const tensor got = r.read(gname);
        REQUIRE(got.shape == stored.shape);
        CHECK(std::memcmp(got.data.data(), want.data.data(), want.data.size() * sizeof(float)) == 0);
        // The loader's weights are those values under the HF conventions.
        const tensor hf = qwen35_from_gguf(s.name, want, c);
        CHECK(std::memcmp(m.weights.at(s.name).data.data(), hf.data.data(), hf.data.size() * sizeof(float)) ==
              0);
      }
      const bool block_dtype =
          dtype != gguf_dtype::f32 && dtype != gguf_dtype::f16 && dtype != gguf_dtype::bf16;
      CHECK((block_typed > 0) == block_dtype);
    }
  }
}

TEST_CASE("gguf quant: the types each export option writes, fallbacks included", "[gguf]") {
  const model_config wide = testing::qwen35_wide_config(false), tiny = preset_config("qwen35-tiny");
  auto type_of = [](const model_config& c, const std::string& hf, gguf_dtype dtype) {
    std::vector<std::int64_t> shape;
    for (const auto& s : qwen35_weight_specs(c))
      if (s.name == hf) shape = s.shape;
    REQUIRE_FALSE(shape.empty());
    if (hf.find("conv1d") != std::string::npos) shape = {shape.front(), shape.back()};
    return qwen35_gguf_tensor_type(hf, shape, c, dtype);
  };
  // Norms, 1-D tensors and conv1d stay F32 in every option.
  for (gguf_dtype dtype : all_dtypes()) {
    CHECK(type_of(wide, "model.norm.weight", dtype) == ggml_type::f32);
    CHECK(type_of(wide, "model.layers.0.linear_attn.A_log", dtype) == ggml_type::f32);
    CHECK(type_of(wide, "model.layers.0.linear_attn.conv1d.weight", dtype) == ggml_type::f32);
    CHECK(type_of(wide, "model.layers.3.self_attn.q_norm.weight", dtype) == ggml_type::f32);
  }
  CHECK(type_of(wide, "model.layers.2.mlp.up_proj.weight", gguf_dtype::bf16) == ggml_type::bf16);
  CHECK(type_of(wide, "lm_head.weight", gguf_dtype::q4_k) == ggml_type::q4_k);  // --pure
  // Q4_K_M on 8 blocks: use_more_bits holds for blocks 0, 3, 6, 7.
  CHECK(type_of(wide, "lm_head.weight", gguf_dtype::q4_k_m) == ggml_type::q6_k);
  CHECK(type_of(wide, "model.embed_tokens.weight", gguf_dtype::q4_k_m) == ggml_type::q4_k);
  CHECK(type_of(wide, "model.layers.0.mlp.down_proj.weight", gguf_dtype::q4_k_m) == ggml_type::q6_k);
  CHECK(type_of(wide, "model.layers.1.mlp.down_proj.weight", gguf_dtype::q4_k_m) == ggml_type::q4_k);
  CHECK(type_of(wide, "model.layers.6.mlp.down_proj.weight", gguf_dtype::q4_k_m) == ggml_type::q6_k);
  CHECK(type_of(wide, "model.layers.0.linear_attn.in_proj_qkv.weight", gguf_dtype::q4_k_m) ==
        ggml_type::q6_k);
  CHECK(type_of(wide, "model.layers.1.linear_attn.in_proj_qkv.weight", gguf_dtype::q4_k_m) ==
        ggml_type::q4_k);
  CHECK(type_of(wide, "model.layers.3.self_attn.v_proj.weight", gguf_dtype::q4_k_m) == ggml_type::q6_k);
  CHECK(type_of(wide, "model.layers.3.self_attn.k_proj.weight", gguf_dtype::q4_k_m) == ggml_type::q4_k);
  CHECK(type_of(wide, "model.layers.2.mlp.gate_proj.weight", gguf_dtype::q5_k_m) == ggml_type::q5_k);
  CHECK(type_of(wide, "model.layers.2.linear_attn.out_proj.weight", gguf_dtype::q5_k_m) == ggml_type::q5_k);
  model_config tied = wide;
  tied.tied_embeddings = true;
  CHECK(type_of(tied, "model.embed_tokens.weight", gguf_dtype::q4_k_m) == ggml_type::q6_k);
  // qwen35-tiny's d_model of 64 does not fill a 256-value block: the K types fall back to Q8_0.
  CHECK(type_of(tiny, "model.layers.2.mlp.up_proj.weight", gguf_dtype::q4_k) == ggml_type::q8_0);
  CHECK(type_of(tiny, "lm_head.weight", gguf_dtype::q4_k_m) == ggml_type::q8_0);
  CHECK(type_of(tiny, "model.layers.2.mlp.up_proj.weight", gguf_dtype::q4_0) == ggml_type::q4_0);
  // A row of 48 values fills no 32-value block either: F16, llama.cpp's last resort.
  model_config odd = tiny;
  odd.d_model = 48;
  CHECK(type_of(odd, "model.layers.2.mlp.up_proj.weight", gguf_dtype::q8_0) == ggml_type::f16);

  CHECK(gguf_dtype_from_string("q4_k_m") == gguf_dtype::q4_k_m);
  CHECK_THROWS_WITH(gguf_dtype_from_string("q4_1"), Catch::Contains("unknown GGUF type 'q4_1'"));
}

TEST_CASE("gguf quant: a quantized tensor cut short by a byte is refused, naming it and the sizes",
          "[gguf]") {
  temp_dir d("gguf-quant");
  struct cut_case {
    ggml_type type;
    std::int64_t ne0;
    std::string message;
  };
  for (const cut_case& k :
       {cut_case{ggml_type::q8_0, 64,
                 "truncated GGUF file (tensor 'w' of type Q8_0, ne [64, 3]: 3 rows of 68 "
                 "bytes = 204 bytes, but 203 bytes remain after its offset)"},
        cut_case{ggml_type::q6_k, 256,
                 "truncated GGUF file (tensor 'w' of type Q6_K, ne [256, 3]: 3 rows of 210 "
                 "bytes = 630 bytes, but 629 bytes remain after its offset)"}}) {
    const std::string path = write_pair(d, "cut.gguf", k.type, 3, k.ne0);
    std::string bytes = slurp(path);
    const auto row =
        *kernels::row_bytes(*kernels::weight_type_from_ggml(static_cast<std::uint32_t>(k.type)), k.ne0);
    // "w" is last: the file is its data padded to 32 bytes; cut one byte off the data itself.
    const std::size_t data = static_cast<std::size_t>(3 * row);
    const std::size_t end = bytes.size() - ((data + 31) / 32 * 32) + data;
    gguf_reader whole(path);
    CHECK(whole.read("w").data.size() == static_cast<std::size_t>(3 * k.ne0));
    spit(d.file("cut1.gguf"), bytes.substr(0, end - 1));
    CHECK_THROWS_AS(gguf_reader(d.file("cut1.gguf")), model_load_error);
    CHECK_THROWS_WITH(gguf_reader(d.file("cut1.gguf")), Catch::Contains(k.message));
    CHECK_THROWS_WITH(gguf_reader(d.file("cut1.gguf")), Catch::Contains("cut1.gguf"));
    spit(d.file("cut0.gguf"), bytes.substr(0, end));  // exactly its bytes, no padding: readable
    CHECK(gguf_reader(d.file("cut0.gguf")).read("w").data == whole.read("w").data);
  }
  // A tensor whose ne says more rows than the space before the next tensor is refused too.
  tensor a, b;
  a.shape = {2, 32};
  a.data.assign(64, 1.0f);
  b.shape = {4};
  b.data.assign(4, 2.0f);
  save_gguf(d.file("pair.gguf"), {}, {{"a", &a, ggml_type::q8_0}, {"b", &b, ggml_type::f32}});
  std::string bytes = slurp(d.file("pair.gguf"));
  put_u32(bytes, info_field(bytes, "a", 2), 3);  // ne1 2 -> 3: 102 bytes from offset 0, b at 96
  spit(d.file("over.gguf"), bytes);
  CHECK_THROWS_WITH(
      gguf_reader(d.file("over.gguf")),
      Catch::Contains("tensor 'a' of type Q8_0, ne [32, 3] (102 bytes at data offset 0) runs into "
                      "tensor 'b' at data offset 96"));

  // A whole Q4_K_M model cut in half does not load.
  const model_config c = testing::qwen35_wide_config(false);
  save_qwen35_gguf(d.file("m.gguf"), c, random_weights(c, 2), nullptr, "", gguf_dtype::q4_k_m);
  const std::string model = slurp(d.file("m.gguf"));
  spit(d.file("m-cut.gguf"), model.substr(0, model.size() / 2));
  CHECK_THROWS_WITH(load_qwen35_gguf(d.file("m-cut.gguf")), Catch::Contains("truncated GGUF file (tensor '"));
}

TEST_CASE("gguf quant: a tensor of a type Anchorage does not read is refused naming it", "[gguf]") {
  temp_dir d("gguf-quant");
  std::string bytes = slurp(write_pair(d, "t.gguf", ggml_type::q8_0, 2, 64));
  put_u32(bytes, info_field(bytes, "w", 3), 3);  // Q4_1
  spit(d.file("q41.gguf"), bytes);
  const gguf_reader r(d.file("q41.gguf"));  // the metadata stays readable
  CHECK(r.read("norm").data.size() == 64);
  const std::string message =
      "tensor 'w' has type Q4_1 (llama.cpp's q4_1, ggml type 3), which Anchorage does not read (supported: "
      "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)";
  CHECK_THROWS_WITH(r.read("w"), Catch::Contains(message));
  CHECK_THROWS_WITH(r.check_readable(*r.find_tensor("w")), Catch::Contains("q41.gguf: " + message));
  put_u32(bytes, info_field(bytes, "w", 3), 77);
  spit(d.file("t77.gguf"), bytes);
  CHECK_THROWS_WITH(gguf_reader(d.file("t77.gguf")).read("w"),
                    Catch::Contains("tensor 'w' has unknown ggml type 77, which Anchorage does not read"));
  CHECK(ggml_type_llama_name(12) == "q4_K");
  CHECK(ggml_type_llama_name(16) == "iq2_xxs");

  // In a model: refused before any tensor is read, naming the tensor.
  const model_config c = preset_config("qwen35-tiny");
  save_qwen35_gguf(d.file("m.gguf"), c, random_weights(c, 2), nullptr, "", gguf_dtype::q8_0);
  std::string model = slurp(d.file("m.gguf"));
  put_u32(model, info_field(model, "blk.5.ffn_up.weight", 3), 3);
  spit(d.file("m-q41.gguf"), model);
  CHECK_THROWS_WITH(
      load_qwen35_gguf(d.file("m-q41.gguf")),
      Catch::Contains("tensor 'blk.5.ffn_up.weight' has type Q4_1 (llama.cpp's q4_1, ggml type 3)"));
}

TEST_CASE("gguf quant: a K-type tensor whose ne0 is not a multiple of 256 is refused", "[gguf]") {
  temp_dir d("gguf-quant");
  // Q8_0 [2, 64] relabelled Q4_K: 64 values do not fill a 256-value block.
  std::string bytes = slurp(write_pair(d, "t.gguf", ggml_type::q8_0, 2, 64));
  put_u32(bytes, info_field(bytes, "w", 3), 12);
  spit(d.file("k.gguf"), bytes);
  const gguf_reader r(d.file("k.gguf"));
  CHECK_THROWS_WITH(r.read("w"),
                    Catch::Contains("k.gguf: tensor 'w' has type Q4_K (llama.cpp's q4_K) with ne0 "
                                    "64, not a multiple of its 256-value blocks"));
  // The writer refuses to write one.
  tensor t;
  t.shape = {2, 64};
  t.data.assign(128, 0.25f);
  CHECK_THROWS_WITH(save_gguf(d.file("bad.gguf"), {}, {{"t", &t, ggml_type::q5_k}}),
                    Catch::Contains("tensor 't' has ne0 64, not a multiple of the Q5_K block (256 values)"));

  // In a model (qwen35-tiny's rows are 64 or 128 values): refused naming the tensor.
  const model_config c = preset_config("qwen35-tiny");
  save_qwen35_gguf(d.file("m.gguf"), c, random_weights(c, 2), nullptr, "", gguf_dtype::q8_0);
  std::string model = slurp(d.file("m.gguf"));
  put_u32(model, info_field(model, "blk.0.attn_qkv.weight", 3), 14);
  spit(d.file("m-k.gguf"), model);
  CHECK_THROWS_WITH(
      load_qwen35_gguf(d.file("m-k.gguf")),
      Catch::Contains("tensor 'blk.0.attn_qkv.weight' has type Q6_K (llama.cpp's q6_K) with ne0 64, "
                      "not a multiple of its 256-value blocks"));
}

TEST_CASE(
    "gguf quant: a model from a Q8_0 file converted at load computes the dequantized F32 weights' logits",
    "[gguf]") {
  temp_dir d("gguf-quant");
  const model_config c = testing::test_config("qwen35-tiny");
  const tensor_map w = random_weights(c, 5);
  save_qwen35_gguf(d.file("q8.gguf"), c, w, nullptr, "", gguf_dtype::q8_0);
  loaded_model m = load_qwen35_gguf(d.file("q8.gguf"));
  REQUIRE(!m.stored.empty());
  convert_stored_to_f32(m);  // --weight-storage f32 (kept as stored: test_stored_weights.cpp)
  m.config.ctx_size = c.ctx_size;
  // The F32 weights an engine gets when the conversion is done here instead of by the loader.
  tensor_map deq;
  for (const auto& s : qwen35_weight_specs(c)) {
    const tensor stored = qwen35_to_gguf(s.name, w.at(s.name), c);
    deq.emplace(s.name, qwen35_from_gguf(s.name,
                                         round_trip(stored, qwen35_gguf_tensor_type(s.name, stored.shape, c,
                                                                                    gguf_dtype::q8_0)),
                                         c));
  }
  engine from_file(m.config, m.weights), from_f32(m.config, deq);
  const std::vector<token_id> ids = testing::test_tokens(70);
  from_file.prefill(ids);
  from_f32.prefill(ids);
  const std::vector<float> a = from_file.last_logits(), b = from_f32.last_logits();
  REQUIRE(a.size() == static_cast<std::size_t>(c.vocab));
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  for (int k = 0; k < 4; ++k) {
    from_file.decode(ids[static_cast<std::size_t>(k)]);
    from_f32.decode(ids[static_cast<std::size_t>(k)]);
    CHECK(std::memcmp(from_file.last_logits().data(), from_f32.last_logits().data(),
                      a.size() * sizeof(float)) == 0);
  }
  // Q8_0 changed the weights (this is not an F32 file in disguise).
  CHECK(m.weights.at("model.layers.0.mlp.up_proj.weight").data !=
        w.at("model.layers.0.mlp.up_proj.weight").data);

  // The same values, stored as Q8_0 or as F32: one fingerprint each, so a cache written under
  // one stored type is never read under the other; the same file loaded twice: the same one.
  CHECK(m.stored_types.at("model.layers.0.mlp.up_proj.weight") == "Q8_0");
  CHECK(m.stored_types.count("model.norm.weight") == 0);  // kept in F32
  const engine_weights as_q8(m.config, m.weights, kernels::backend::cpu, m.stored_types);
  const engine_weights as_f32(m.config, m.weights);
  CHECK(as_q8.digest() != as_f32.digest());
  CHECK(as_f32.digest() == weights_digest(m.weights));
  loaded_model again = load_qwen35_gguf(d.file("q8.gguf"));
  convert_stored_to_f32(again);
  CHECK(engine_weights(m.config, again.weights, kernels::backend::cpu, again.stored_types).digest() ==
        as_q8.digest());
  save_qwen35_gguf(d.file("q4.gguf"), c, w, nullptr, "", gguf_dtype::q4_0);
  const loaded_model q4 = load_qwen35_gguf(d.file("q4.gguf"));
  CHECK(q4.stored_types.at("model.layers.0.mlp.up_proj.weight") == "Q4_0");
}
