// Tests for the vision tower read with a checkpoint: a Hugging Face folder's model.visual.*
// tensors (runtime/model/model_dir) and llama.cpp's mmproj GGUF (runtime/model/mmproj_gguf), both
// into loaded_vision, which runtime/vision and runtime/image then build from.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
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
#include "runtime/model/model_weights.hpp"
#include "runtime/vision/vision_config.hpp"
#include "runtime/vision/vision_weights.hpp"
#include "tests/model/test_model_dir_checks.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const model_config& text_config() {
  static const model_config c = preset_config("qwen35-tiny");
  return c;
}

const tensor_map& text_weights() {
  static const tensor_map w = round_to(random_weights(text_config(), 5), safetensors_dtype::bf16);
  return w;
}

// The tiny vision preset (depth 2, hidden 64, the real patch geometry), writing into the text model.
vision_config tiny_tower() { return tiny_vision_config(text_config().d_model); }

// config.json's vision_config for `v`, as Hugging Face writes it (with keys the loader passes on).
json hf_vision_config(const vision_config& v) {
  return {{"model_type", "qwen3_5"},
          {"depth", v.depth},
          {"hidden_size", v.hidden_size},
          {"num_heads", v.num_heads},
          {"intermediate_size", v.intermediate_size},
          {"hidden_act", "gelu_pytorch_tanh"},
          {"in_channels", v.in_channels},
          {"patch_size", v.patch_size},
          {"temporal_patch_size", v.temporal_patch_size},
          {"spatial_merge_size", v.spatial_merge_size},
          {"out_hidden_size", v.out_hidden_size},
          {"num_position_embeddings", v.num_position_embeddings},
          {"initializer_range", 0.02},
          {"deepstack_visual_indexes", json::array()}};
}

const std::string& hf_processor_text() {
  static const std::string text = json{
      {"size", {{"shortest_edge", 65536}, {"longest_edge", 16777216}}},
      {"patch_size", 16},
      {"temporal_patch_size", 2},
      {"merge_size", 2},
      {"image_mean", {0.5, 0.5, 0.5}},
      {"image_std", {0.5, 0.5, 0.5}},
      {"image_processor_type", "Qwen2VLImageProcessorFast"},
      {"processor_class",
       "Qwen3VLProcessor"}}.dump(2);
  return text;
}

// A multimodal checkpoint with a real (random) tiny vision tower.
checkpoint_options with_tower(const tensor_map& vision) {
  checkpoint_options o;
  o.vision_weights = vision;
  o.vision_config = hf_vision_config(tiny_tower());
  o.preprocessor_config = hf_processor_text();
  return o;
}

const tensor_map& tower_weights() {
  static const tensor_map w = random_vision_weights(tiny_tower(), 9);
  return w;
}

// write_checkpoint, with the text rotary's mrope_section cut to the tiny model's 4 frequency pairs
// (the writer gives Qwen3.5's [11, 11, 10], which a config reader may check against them).
void write_tiny(const std::string& dir, const checkpoint_options& o) {
  write_checkpoint(dir, text_config(), text_weights(), o);
  if (!o.multimodal) return;
  json config = json::parse(std::ifstream(dir + "/config.json"));
  config["text_config"]["rope_parameters"]["mrope_section"] = {2, 1, 1};
  std::ofstream(dir + "/config.json") << config.dump(2);
}

tensor_map text_f32(loaded_model m) {
  convert_stored_to_f32(m);
  return std::move(m.weights);
}

std::uint64_t text_digest(const loaded_model& m) {
  return weights_digest(m.weights, m.stored_types, m.stored);
}

std::string load_error(const std::string& dir) {
  try {
    load_model_dir(dir);
  } catch (const model_load_error& e) {
    return e.what();
  }
  return "(no error)";
}

// --- llama.cpp's mmproj, written here under its names from Hugging Face tensors -------------

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
  try {
    load_mmproj(path);
  } catch (const model_load_error& e) {
    return e.what();
  }
  return "(no error)";
}

void check_same_vision_config(const vision_config& got, const vision_config& want) {
  CHECK(got.depth == want.depth);
  CHECK(got.hidden_size == want.hidden_size);
  CHECK(got.num_heads == want.num_heads);
  CHECK(got.intermediate_size == want.intermediate_size);
  CHECK(got.hidden_act == want.hidden_act);
  CHECK(got.in_channels == want.in_channels);
  CHECK(got.patch_size == want.patch_size);
  CHECK(got.temporal_patch_size == want.temporal_patch_size);
  CHECK(got.spatial_merge_size == want.spatial_merge_size);
  CHECK(got.out_hidden_size == want.out_hidden_size);
  CHECK(got.num_position_embeddings == want.num_position_embeddings);
  CHECK(got.rope_theta == want.rope_theta);
}

void check_same_processor(const image_processor_config& got, const image_processor_config& want) {
  CHECK(got.patch_size == want.patch_size);
  CHECK(got.merge_size == want.merge_size);
  CHECK(got.temporal_patch_size == want.temporal_patch_size);
  CHECK(got.min_pixels == want.min_pixels);
  CHECK(got.max_pixels == want.max_pixels);
  for (int c = 0; c < 3; ++c) {
    CHECK(got.mean[c] == want.mean[c]);
    CHECK(got.std[c] == want.std[c]);
  }
}

}  // namespace

TEST_CASE("a checkpoint's vision tower is read with it, BF16 rounding aside bit for bit", "[model][vision]") {
  const tensor_map rounded = round_to(tower_weights(), safetensors_dtype::bf16);
  for (const bool own_shard : {false, true}) {
    INFO("vision in a shard of its own: " << own_shard);
    temp_dir dir("vision-dir");
    checkpoint_options o = with_tower(tower_weights());
    o.vision_shard = own_shard;
    write_tiny(dir.str(), o);
    REQUIRE(fs::exists(dir.file("model-00001-of-00003.safetensors")));
    REQUIRE(fs::exists(dir.file("model-vision.safetensors")) == own_shard);

    const loaded_model m = load_model(dir.str());
    REQUIRE(m.vision.has_value());
    check_bit_equal(m.vision->weights, rounded);
    CHECK(m.vision->config == hf_vision_config(tiny_tower()));
    CHECK(m.vision->processor_config == hf_processor_text());
    CHECK(m.vision->source == dir.str());
    // The text model is what it always was: no vision tensor among its weights.
    check_bit_equal(text_f32(m), text_weights());

    // What the vision and image layers make of it.
    const vision_config vc = vision_config_from_json(m.vision->config, "config.json");
    check_same_vision_config(vc, tiny_tower());
    tensor_map copy = m.vision->weights;
    const vision_weights vw = load_vision_weights(vc, std::move(copy), m.vision->source);
    CHECK(vw.blocks.size() == 2u);
    CHECK(vw.pos_embed == rounded.at("model.visual.pos_embed.weight").data);
    const auto processor = image_processor_config_from_json(m.vision->processor_config);
    REQUIRE(processor.has_value());
    check_same_processor(*processor, image_processor_config{});
  }
}

TEST_CASE("a tower stored as visual.*, in F16 or F32 or one file, is kept as model.visual.*",
          "[model][vision]") {
  for (const safetensors_dtype d :
       {safetensors_dtype::f16, safetensors_dtype::f32, safetensors_dtype::bf16}) {
    INFO(to_string(d));
    temp_dir dir("vision-dir");
    checkpoint_options o = with_tower(tower_weights());
    o.vision_store_prefix = "visual.";
    o.dtype = d;
    o.shards = d == safetensors_dtype::bf16 ? 0 : 2;
    o.preprocessor_config.clear();
    write_tiny(dir.str(), o);

    const loaded_model m = load_model_dir(dir.str());
    REQUIRE(m.vision.has_value());
    check_bit_equal(m.vision->weights, round_to(tower_weights(), d));
    CHECK(m.vision->processor_config.empty());
    tensor_map copy = m.vision->weights;
    CHECK_NOTHROW(load_vision_weights(tiny_tower(), std::move(copy), "loaded"));
  }
}

TEST_CASE("a text-only checkpoint has no vision, and the text weights digest as before", "[model][vision]") {
  SECTION("the flat text-only form") {
    checkpoint_options o;
    o.multimodal = false;
    o.visual = false;
    temp_dir dir("vision-dir");
    write_tiny(dir.str(), o);
    const loaded_model m = load_model_dir(dir.str());
    CHECK(!m.vision.has_value());
    check_bit_equal(text_f32(m), text_weights());
  }
  SECTION("a vision_config and no vision tensors (a text-only export): no vision, no error") {
    checkpoint_options o = with_tower(tower_weights());
    o.visual = false;
    temp_dir dir("vision-dir");
    write_tiny(dir.str(), o);
    const loaded_model m = load_model_dir(dir.str());
    CHECK(!m.vision.has_value());
  }
  SECTION("with and without a tower, the text model's digest is the same") {
    temp_dir with("vision-dir"), without("vision-dir"), flat("vision-dir");
    write_tiny(with.str(), with_tower(tower_weights()));
    checkpoint_options none = with_tower(tower_weights());
    none.visual = false;
    write_tiny(without.str(), none);
    checkpoint_options text_only;
    text_only.multimodal = false;
    text_only.visual = false;
    write_tiny(flat.str(), text_only);
    const loaded_model a = load_model_dir(with.str()), b = load_model_dir(without.str()),
                       f = load_model_dir(flat.str());
    REQUIRE(a.vision.has_value());
    CHECK(text_digest(a) == text_digest(b));
    CHECK(text_digest(a) == text_digest(f));
    loaded_model a32 = a, b32 = b;
    convert_stored_to_f32(a32);
    convert_stored_to_f32(b32);
    CHECK(text_digest(a32) == text_digest(b32));
  }
  SECTION("the tower's own shard missing: loads text-only, with a warning") {
    checkpoint_options o = with_tower(tower_weights());
    o.vision_shard = true;
    temp_dir dir("vision-dir"), plain("vision-dir");
    write_tiny(dir.str(), o);
    write_tiny(plain.str(), o);
    fs::remove(dir.file("model-vision.safetensors"));
    log_capture logs;
    const loaded_model m = load_model_dir(dir.str());
    CHECK(!m.vision.has_value());
    CHECK(logs.contains("model-vision.safetensors"));
    CHECK(text_digest(m) == text_digest(load_model_dir(plain.str())));
  }
}

TEST_CASE("vision_digest follows the tower's values, config and processor", "[model][vision]") {
  temp_dir dir("vision-dir");
  write_tiny(dir.str(), with_tower(tower_weights()));
  const loaded_model m = load_model_dir(dir.str());
  REQUIRE(m.vision.has_value());
  const loaded_vision& v = *m.vision;
  CHECK(vision_digest(v) == vision_digest(*load_model_dir(dir.str()).vision));
  loaded_vision changed = v;
  changed.weights.at("model.visual.blocks.1.mlp.linear_fc2.bias").data[3] += 1.0f / 64;
  CHECK(vision_digest(changed) != vision_digest(v));
  changed = v;
  changed.config["num_heads"] = 8;
  CHECK(vision_digest(changed) != vision_digest(v));
  changed = v;
  changed.processor_config.clear();
  CHECK(vision_digest(changed) != vision_digest(v));
}

TEST_CASE("a tower missing tensors is kept whole and the vision layer names what is missing",
          "[model][vision]") {
  tensor_map partial = tower_weights();
  partial.erase("model.visual.merger.linear_fc2.bias");
  partial.erase("model.visual.blocks.1.norm2.weight");
  partial["model.visual.deepstack_merger_list.0.norm.weight"] = tensor{{4}, {1, 2, 3, 4}};
  temp_dir dir("vision-dir");
  write_tiny(dir.str(), with_tower(partial));
  const loaded_model m = load_model_dir(dir.str());
  REQUIRE(m.vision.has_value());
  CHECK(m.vision->weights.size() == partial.size());
  CHECK(m.vision->weights.count("model.visual.deepstack_merger_list.0.norm.weight") == 1u);
  tensor_map copy = m.vision->weights;
  try {
    load_vision_weights(tiny_tower(), std::move(copy), m.vision->source);
    FAIL("load_vision_weights accepted an incomplete tower");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("merger.linear_fc2.bias"));
    CHECK_THAT(what, Catch::Contains("blocks.1.norm2.weight"));
  }
}

TEST_CASE("a folder's vision tensors that cannot be read are errors naming them", "[model][vision]") {
  SECTION("a tensor in a dtype other than F32, F16, BF16") {
    checkpoint_options o = with_tower(tower_weights());
    o.vision_shard = true;
    temp_dir dir("vision-dir");
    write_tiny(dir.str(), o);
    // The vision shard replaced by one I8 tensor, the index pointing at it alone.
    write_raw_safetensors(
        dir.file("model-vision.safetensors"),
        {{"model.visual.pos_embed.weight", {{"dtype", "I8"}, {"shape", {2}}, {"data_offsets", {0, 2}}}}},
        std::string(2, '\0'));
    json index = json::parse(std::ifstream(dir.file("model.safetensors.index.json")));
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end();)
      it = it.value() == "model-vision.safetensors" ? index["weight_map"].erase(it) : std::next(it);
    index["weight_map"]["model.visual.pos_embed.weight"] = "model-vision.safetensors";
    std::ofstream(dir.file("model.safetensors.index.json")) << index.dump();
    const std::string what = load_error(dir.str());
    CHECK_THAT(what, Catch::Contains("model-vision.safetensors"));
    CHECK_THAT(what, Catch::Contains("'model.visual.pos_embed.weight' has dtype I8"));
  }
  SECTION("a tensor stored both as model.visual.x and visual.x") {
    checkpoint_options o = with_tower(tower_weights());
    o.shards = 0;
    temp_dir dir("vision-dir");
    write_tiny(dir.str(), o);
    // model.safetensors becomes the first shard of an index whose second holds one tensor again,
    // under the short prefix.
    const tensor pos = tower_weights().at("model.visual.pos_embed.weight");
    save_safetensors(dir.file("model-twin.safetensors"), {{"visual.pos_embed.weight", pos}});
    json weight_map = json::object();
    for (const auto& [name, t] : load_safetensors(dir.file("model.safetensors")).tensors)
      weight_map[name] = "model.safetensors";
    weight_map["visual.pos_embed.weight"] = "model-twin.safetensors";
    std::ofstream(dir.file("model.safetensors.index.json")) << json{{"weight_map", weight_map}}.dump();
    const std::string what = load_error(dir.str());
    CHECK_THAT(what, Catch::Contains("'model.visual.pos_embed.weight'"));
    CHECK_THAT(what, Catch::Contains("also stored as"));
    CHECK_THAT(what, Catch::Contains("'visual.pos_embed.weight'"));
  }
}

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
