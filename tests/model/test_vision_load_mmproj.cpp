// Tests for the vision tower read from llama.cpp's mmproj GGUF (runtime/model/mmproj_gguf), written
// here from the Hugging Face tower of a checkpoint, into the loaded_vision the checkpoint gives
// (test_vision_load.cpp), which runtime/vision and runtime/image then build from.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/image/image_processor_config.hpp"
#include "runtime/model/gguf_file.hpp"
#include "runtime/model/half_float.hpp"
#include "runtime/model/mmproj_gguf.hpp"
#include "runtime/model/model_dir.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/vision/vision_config.hpp"
#include "runtime/vision/vision_weights.hpp"
#include "tests/model/test_model_dir_checks.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vision_checkpoint.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using json = nlohmann::json;

namespace {

// llama.cpp's mmproj, written here under its names from Hugging Face tensors.

using kv_list = std::vector<std::pair<std::string, gguf_value>>;

gguf_value float_array(std::vector<double> v) {
  gguf_value g;
  g.type = gguf_type::array;
  g.elem = gguf_type::float32;
  g.floats = std::move(v);
  return g;
}

// clip.* metadata as convert_hf_to_gguf.py --mmproj writes it for Qwen3.5 (Qwen3VLVisionModel).
kv_list mmproj_metadata(const vision_config& v) {
  const int side = v.position_side();
  return {{"general.architecture", gguf_value::str("clip")},
          {"general.type", gguf_value::str("mmproj")},
          {"general.alignment", gguf_value::u32(32)},
          {"clip.has_vision_encoder", gguf_value::boolean(true)},
          {"clip.projector_type", gguf_value::str("qwen3vl_merger")},
          {"clip.use_gelu", gguf_value::boolean(true)},
          {"clip.vision.projection_dim", gguf_value::u32(v.out_hidden_size)},
          {"clip.vision.image_size", gguf_value::u32(side * v.patch_size)},
          {"clip.vision.patch_size", gguf_value::u32(v.patch_size)},
          {"clip.vision.embedding_length", gguf_value::u32(v.hidden_size)},
          {"clip.vision.feed_forward_length", gguf_value::u32(v.intermediate_size)},
          {"clip.vision.block_count", gguf_value::u32(v.depth)},
          {"clip.vision.attention.head_count", gguf_value::u32(v.num_heads)},
          {"clip.vision.image_mean", float_array({0.5, 0.5, 0.5})},
          {"clip.vision.image_std", float_array({0.5, 0.5, 0.5})},
          {"clip.vision.spatial_merge_size", gguf_value::u32(v.spatial_merge_size)},
          {"clip.vision.attention.layer_norm_epsilon", gguf_value::f32(1e-6f)},
          {"clip.vision.image_min_pixels", gguf_value::u32(65536)},
          {"clip.vision.image_max_pixels", gguf_value::u32(16777216)}};
}

void set_key(kv_list& kv, const std::string& key, gguf_value value) {
  for (auto& [k, v] : kv)
    if (k == key) {
      v = std::move(value);
      return;
    }
  kv.emplace_back(key, std::move(value));
}

void erase_key(kv_list& kv, const std::string& key) {
  kv.erase(std::remove_if(kv.begin(), kv.end(), [&](const auto& e) { return e.first == key; }), kv.end());
}

// The GGUF name of a Hugging Face vision tensor (without "model.visual."), as llama.cpp's
// tensor_mapping.py / constants.py name them; empty for patch_embed.proj.weight (split in two).
std::string gguf_name(const std::string& hf) {
  static const std::vector<std::pair<std::string, std::string>> whole = {
      {"patch_embed.proj.bias", "v.patch_embd.bias"}, {"pos_embed.weight", "v.position_embd.weight"},
      {"merger.norm.weight", "v.post_ln.weight"},     {"merger.norm.bias", "v.post_ln.bias"},
      {"merger.linear_fc1.weight", "mm.0.weight"},    {"merger.linear_fc1.bias", "mm.0.bias"},
      {"merger.linear_fc2.weight", "mm.2.weight"},    {"merger.linear_fc2.bias", "mm.2.bias"}};
  for (const auto& [from, to] : whole)
    if (hf == from) return to;
  if (hf == "patch_embed.proj.weight") return {};
  static const std::vector<std::pair<std::string, std::string>> block = {
      {"attn.qkv.", "attn_qkv."}, {"attn.proj.", "attn_out."},    {"norm1.", "ln1."},
      {"norm2.", "ln2."},         {"mlp.linear_fc1.", "ffn_up."}, {"mlp.linear_fc2.", "ffn_down."}};
  const std::size_t dot = hf.find('.', 7);  // "blocks.N."
  const std::string n = hf.substr(7, dot - 7), rest = hf.substr(dot + 1);
  for (const auto& [from, to] : block)
    if (rest.compare(0, from.size(), from) == 0) return "v.blk." + n + "." + to + rest.substr(from.size());
  FAIL("no GGUF name for " << hf);
  return {};
}

// One Conv2D kernel [h, C, p, p] of the Conv3D weight [h, C, T, p, p]: frame t.
tensor patch_kernel(const tensor& w, int t) {
  const std::int64_t h = w.shape[0], c = w.shape[1], frames = w.shape[2], pp = w.shape[3] * w.shape[4];
  tensor k;
  k.shape = {h, c, w.shape[3], w.shape[4]};
  for (std::int64_t oc = 0; oc < h * c; ++oc) {
    const auto from = w.data.begin() + (oc * frames + t) * pp;
    k.data.insert(k.data.end(), from, from + pp);
  }
  return k;
}

struct mmproj_options {
  ggml_type matrices = ggml_type::f32;  // the type of every tensor of two or more dimensions
  std::vector<std::string> drop;        // GGUF tensors left out
  tensor_map extra;                     // more tensors, under GGUF names (F32)
};

// Writes `vision` (model.visual.* names) as an mmproj GGUF with `kv`. A matrix whose ne0 does not
// fill a block type's blocks is written as F16, as llama.cpp's converter falls back.
void write_mmproj(const std::string& path, const tensor_map& vision, const kv_list& kv,
                  const mmproj_options& o = {}) {
  tensor_map named;
  for (const auto& [name, t] : vision) {
    const std::string hf = name.substr(std::strlen("model.visual."));
    if (hf == "patch_embed.proj.weight") {
      named.emplace("v.patch_embd.weight", patch_kernel(t, 0));
      named.emplace("v.patch_embd.weight.1", patch_kernel(t, 1));
    } else {
      named.emplace(gguf_name(hf), t);
    }
  }
  for (const auto& [name, t] : o.extra) named.emplace(name, t);
  std::vector<gguf_tensor_out> out;
  for (const auto& [name, t] : named) {
    if (std::find(o.drop.begin(), o.drop.end(), name) != o.drop.end()) continue;
    ggml_type type = t.shape.size() >= 2 ? o.matrices : ggml_type::f32;
    const bool block = type != ggml_type::f32 && type != ggml_type::f16 && type != ggml_type::bf16;
    if (block && t.shape.back() % 32 != 0) type = ggml_type::f16;
    out.push_back({name, &t, type});
  }
  save_gguf(path, kv, out);
}

std::string mmproj_error(const std::string& path) {
  return model_load_error_of([&] { load_mmproj(path); });
}

}  // namespace

TEST_CASE("an mmproj GGUF loads into the tensors and config of the checkpoint it came from",
          "[model][vision]") {
  temp_dir dir("vision-dir");
  write_tiny(dir.str(), with_tower(tower_weights()));
  const loaded_model hf = load_model_dir(dir.str());
  REQUIRE(hf.vision.has_value());
  const vision_config hf_config = vision_config_from_json(hf.vision->config, "config.json");
  const auto hf_processor = image_processor_config_from_json(hf.vision->processor_config);
  REQUIRE(hf_processor.has_value());

  SECTION("F32, F16 and BF16 files") {
    for (const ggml_type type : {ggml_type::f32, ggml_type::f16, ggml_type::bf16}) {
      INFO(ggml_type_name(static_cast<std::uint32_t>(type)));
      const std::string path = dir.file("mmproj.gguf");
      write_mmproj(path, hf.vision->weights, mmproj_metadata(tiny_tower()), {type, {}, {}});
      const loaded_vision v = load_mmproj(path);
      CHECK(v.source == path);
      // BF16 values are F16 values too, except where F16's range or subnormals round them.
      tensor_map want = hf.vision->weights;
      if (type == ggml_type::f16)
        for (auto& [name, t] : want)
          if (t.shape.size() >= 2) t = round_to({{name, t}}, safetensors_dtype::f16).at(name);
      check_bit_equal(v.weights, want);

      const vision_config got = vision_config_from_json(v.config, "mmproj");
      check_same_vision_config(got, hf_config);
      for (const char* key : {"depth", "hidden_size", "num_heads", "intermediate_size", "hidden_act",
                              "in_channels", "patch_size", "temporal_patch_size", "spatial_merge_size",
                              "out_hidden_size", "num_position_embeddings"}) {
        INFO(key);
        CHECK(v.config.at(key) == hf.vision->config.at(key));
      }
      const auto processor = image_processor_config_from_json(v.processor_config);
      REQUIRE(processor.has_value());
      check_same_processor(*processor, *hf_processor);
      tensor_map copy = v.weights;
      CHECK_NOTHROW(load_vision_weights(got, std::move(copy), v.source));
    }
  }
  SECTION("without the pixel limits, the processor's defaults stand; other means are kept as float32") {
    const std::string path = dir.file("mmproj-clip-mean.gguf");
    kv_list kv = mmproj_metadata(tiny_tower());
    erase_key(kv, "clip.vision.image_min_pixels");
    erase_key(kv, "clip.vision.image_max_pixels");
    set_key(kv, "clip.vision.image_mean", float_array({0.48145466, 0.4578275, 0.40821073}));
    write_mmproj(path, hf.vision->weights, kv);
    const loaded_vision v = load_mmproj(path);
    const json p = json::parse(v.processor_config);
    CHECK(!p.contains("min_pixels"));
    CHECK(!p.contains("max_pixels"));
    const auto processor = image_processor_config_from_json(v.processor_config);
    REQUIRE(processor.has_value());
    CHECK(processor->min_pixels == image_processor_config{}.min_pixels);
    CHECK(processor->mean[0] == 0.48145466f);
    CHECK(processor->mean[2] == 0.40821073f);
  }
  SECTION("Q8_0 matrices come back within the type's rounding") {
    const std::string path = dir.file("mmproj-q8.gguf");
    write_mmproj(path, hf.vision->weights, mmproj_metadata(tiny_tower()), {ggml_type::q8_0, {}, {}});
    const loaded_vision v = load_mmproj(path);
    REQUIRE(v.weights.size() == hf.vision->weights.size());
    for (const auto& [name, t] : hf.vision->weights) {
      INFO(name);
      const tensor& got = v.weights.at(name);
      REQUIRE(got.shape == t.shape);
      const std::size_t row = static_cast<std::size_t>(t.shape.back());
      for (std::size_t r = 0; r < t.data.size() / row; ++r) {
        float amax = 0;
        for (std::size_t i = 0; i < row; ++i) amax = std::max(amax, std::fabs(t.data[r * row + i]));
        for (std::size_t i = 0; i < row; ++i)
          REQUIRE(std::fabs(got.data[r * row + i] - t.data[r * row + i]) <= amax / 127 + 1e-7f);
      }
    }
  }
}

TEST_CASE("an mmproj that is not Qwen3.5's vision tower is an error naming the key or tensor",
          "[model][vision]") {
  temp_dir dir("vision-dir");
  const tensor_map& w = tower_weights();
  const std::string path = dir.file("mmproj.gguf");
  auto error_with = [&](kv_list kv, const mmproj_options& o = {}) {
    write_mmproj(path, w, kv, o);
    return mmproj_error(path);
  };
  const kv_list good = mmproj_metadata(tiny_tower());
  REQUIRE(error_with(good) == "(no error)");

  kv_list kv = good;
  set_key(kv, "general.architecture", gguf_value::str("qwen35"));
  CHECK_THAT(error_with(kv), Catch::Contains(path) && Catch::Contains("'general.architecture'") &&
                                 Catch::Contains("'qwen35'"));
  kv = good;
  set_key(kv, "clip.has_vision_encoder", gguf_value::boolean(false));
  CHECK_THAT(error_with(kv),
             Catch::Contains("no vision encoder") && Catch::Contains("clip.has_vision_encoder"));
  kv = good;
  set_key(kv, "clip.projector_type", gguf_value::str("qwen2.5vl_merger"));
  CHECK_THAT(error_with(kv),
             Catch::Contains("'clip.projector_type'") && Catch::Contains("'qwen2.5vl_merger'"));
  kv = good;
  set_key(kv, "clip.vision.projector_type", gguf_value::str("gemma3"));  // a mixed-modality file's key wins
  CHECK_THAT(error_with(kv), Catch::Contains("'clip.vision.projector_type'") && Catch::Contains("'gemma3'"));
  kv = good;
  erase_key(kv, "clip.vision.projection_dim");
  CHECK_THAT(error_with(kv), Catch::Contains("missing metadata 'clip.vision.projection_dim'"));
  kv = good;
  set_key(kv, "clip.vision.block_count", gguf_value::str("2"));
  CHECK_THAT(error_with(kv),
             Catch::Contains("'clip.vision.block_count'") && Catch::Contains("expected an integer"));
  kv = good;
  set_key(kv, "clip.vision.image_size", gguf_value::u32(770));
  CHECK_THAT(error_with(kv),
             Catch::Contains("'clip.vision.image_size'") && Catch::Contains("not a multiple"));
  kv = good;
  erase_key(kv, "clip.vision.image_std");
  CHECK_THAT(error_with(kv), Catch::Contains("missing metadata 'clip.vision.image_std'"));
  kv = good;
  erase_key(kv, "clip.use_gelu");
  CHECK_THAT(error_with(kv), Catch::Contains("'clip.use_gelu'"));
  kv = good;
  set_key(kv, "clip.vision.is_deepstack_layers", gguf_value::bool_array({false, true}));
  CHECK_THAT(error_with(kv),
             Catch::Contains("'clip.vision.is_deepstack_layers'") && Catch::Contains("DeepStack"));

  CHECK_THAT(error_with(good, {ggml_type::f32, {"mm.2.bias"}, {}}),
             Catch::Contains("missing tensor 'mm.2.bias'"));
  CHECK_THAT(error_with(good, {ggml_type::f32, {"v.patch_embd.weight.1"}, {}}),
             Catch::Contains("missing tensor 'v.patch_embd.weight.1'"));
  kv = good;
  set_key(kv, "clip.vision.projection_dim", gguf_value::u32(tiny_tower().out_hidden_size + 1));
  CHECK_THAT(error_with(kv),
             Catch::Contains("tensor 'mm.2.weight' has shape") && Catch::Contains("expected"));
  CHECK_THAT(
      error_with(good, {ggml_type::f32, {}, {{"v.deepstack.1.fc1.weight", tensor{{4}, {0, 0, 0, 0}}}}}),
      Catch::Contains("'v.deepstack.1.fc1.weight'") && Catch::Contains("DeepStack"));
  CHECK_THAT(
      error_with(good, {ggml_type::f32, {}, {{"v.blk.2.ln1.weight", tensor{{64}, std::vector<float>(64)}}}}),
      Catch::Contains("'v.blk.2.ln1.weight'"));

  // A text GGUF given as an mmproj, and an mmproj given as --model.
  std::ofstream(dir.file("not.gguf")) << "not a gguf file at all";
  CHECK_THAT(mmproj_error(dir.file("not.gguf")), Catch::Contains(dir.file("not.gguf")));
  write_mmproj(path, w, good);
  try {
    load_model(path);
    FAIL("load_model read an mmproj as a model");
  } catch (const model_load_error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("general.architecture"));
  }
}
