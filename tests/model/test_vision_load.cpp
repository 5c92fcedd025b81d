// Tests for the vision tower read with a Hugging Face checkpoint: a folder's model.visual.*
// tensors (runtime/model/model_dir) into loaded_vision, which runtime/vision and runtime/image then
// build from. llama.cpp's mmproj GGUF towers: test_vision_load_mmproj.cpp.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "runtime/image/image_processor_config.hpp"
#include "runtime/model/model_dir.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/vision/vision_config.hpp"
#include "runtime/vision/vision_weights.hpp"
#include "tests/model/test_model_dir_checks.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vision_checkpoint.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

tensor_map text_f32(loaded_model m) {
  convert_stored_to_f32(m);
  return std::move(m.weights);
}

std::uint64_t text_digest(const loaded_model& m) {
  return weights_digest(m.weights, m.stored_types, m.stored);
}

std::string load_error(const std::string& dir) {
  return model_load_error_of([&] { load_model_dir(dir); });
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
