// Tests for runtime/vision's config and weights: config.json's vision_config read and refused with
// the key named, the tensors under the Hugging Face names shape-checked with the tensor named.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/model/safetensors.hpp"
#include "runtime/vision/vision_config.hpp"
#include "runtime/vision/vision_weights.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;

namespace {

// A Qwen3.5 config.json, text part elided, with the 0.8B's vision keys.
nlohmann::json qwen35_config() {
  return nlohmann::json::parse(R"({
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "text_config": {"hidden_size": 1024},
    "vision_config": {"depth": 12, "hidden_size": 768, "num_heads": 12, "intermediate_size": 3072,
                      "hidden_act": "gelu_pytorch_tanh", "in_channels": 3, "patch_size": 16,
                      "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 1024,
                      "num_position_embeddings": 2304, "model_type": "qwen3_5", "initializer_range": 0.02}
  })");
}

std::string config_error(const nlohmann::json& j) {
  try {
    vision_config_from_json(j, "config.json");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("vision config: reads a Qwen3.5 config.json's vision_config", "[vision]") {
  const vision_config c = vision_config_from_json(qwen35_config(), "config.json");
  CHECK(c.depth == 12);
  CHECK(c.hidden_size == 768);
  CHECK(c.num_heads == 12);
  CHECK(c.head_dim() == 64);
  CHECK(c.intermediate_size == 3072);
  CHECK(c.hidden_act == vision_activation::gelu_tanh);
  CHECK(c.out_hidden_size == 1024);
  CHECK(c.position_side() == 48);
  CHECK(c.patch_values() == 1536);
  CHECK(c.merged_hidden() == 4 * 768);
  CHECK(c.rope_theta == 10000.0);
  CHECK(c.layer_norm_eps == 1e-6f);

  // The vision_config object on its own, defaults for what it omits (Qwen3_5VisionConfig's).
  const vision_config d =
      vision_config_from_json(nlohmann::json{{"depth", 2}, {"hidden_size", 64}}, "v.json");
  CHECK(d.num_heads == 16);
  CHECK(d.num_position_embeddings == 2304);
  auto with_theta = qwen35_config();
  with_theta["vision_config"]["rope_parameters"] = {{"rope_theta", 20000.0}};
  CHECK(vision_config_from_json(with_theta, "config.json").rope_theta == 20000.0);
}

TEST_CASE("vision config: refusals name the file and the key", "[vision]") {
  auto set = [](const char* key, nlohmann::json value) {
    auto j = qwen35_config();
    j["vision_config"][key] = std::move(value);
    return j;
  };
  CHECK_THAT(config_error(set("num_heads", "12")),
             Catch::Contains("config.json: vision_config.num_heads must be an integer"));
  CHECK_THAT(config_error(set("num_heads", 7)), Catch::Contains("not divisible by num_heads 7"));
  CHECK_THAT(config_error(set("num_heads", 128)), Catch::Contains("head_dim 6 ") && Catch::Contains("by 4"));
  CHECK_THAT(config_error(set("num_position_embeddings", 2300)), Catch::Contains("not a perfect square"));
  CHECK_THAT(config_error(set("depth", 0)), Catch::Contains("vision_config.depth is out of range"));
  CHECK_THAT(config_error(set("hidden_act", "relu")), Catch::Contains("vision_config.hidden_act 'relu'"));
  CHECK_THAT(config_error(set("deepstack_visual_indexes", {5, 11})), Catch::Contains("DeepStack"));
  CHECK(vision_config_from_json(set("deepstack_visual_indexes", nlohmann::json::array()), "c").depth == 12);
  CHECK_THAT(config_error(nlohmann::json{{"text_config", {{"hidden_size", 8}}}}),
             Catch::Contains("no 'vision_config'"));
  CHECK(config_error(qwen35_config()) == "no error");
}

TEST_CASE("vision weights: the Hugging Face names, either prefix, from a safetensors file", "[vision]") {
  const vision_config c = tiny_vision_config(40);
  const std::vector<tensor_spec> specs = vision_weight_specs(c);
  REQUIRE(specs.size() == 3 + 12 * 2 + 6);
  CHECK(specs.front().name == "model.visual.patch_embed.proj.weight");
  CHECK(specs.front().shape == std::vector<std::int64_t>{64, 3, 2, 16, 16});
  CHECK(specs[2].name == "model.visual.pos_embed.weight");
  CHECK(specs[specs.size() - 2].name == "model.visual.merger.linear_fc2.weight");
  CHECK(specs[specs.size() - 2].shape == std::vector<std::int64_t>{40, 256});
  CHECK(specs.back().name == "model.visual.merger.linear_fc2.bias");

  // Through a file, with the language model's tensors beside them (ignored).
  testing::temp_dir dir("anchorage-vision-weights");
  tensor_map tensors = random_vision_weights(c, 2);
  tensors["model.language_model.embed_tokens.weight"] = tensor{{2, 3}, {1, 2, 3, 4, 5, 6}};
  save_safetensors(dir.file("model.safetensors"), tensors);
  const vision_weights w =
      load_vision_weights(c, load_safetensors(dir.file("model.safetensors")).tensors, "m");
  CHECK(w.blocks.size() == 2);
  CHECK(w.patch_weight.size() == 64u * 1536);
  CHECK(w.merger_fc1_weight.size() == 256u * 256);
  CHECK(w.blocks[1].fc1_bias.size() == 176u);

  // The short prefix some checkpoints use.
  tensor_map short_names;
  for (auto& [name, t] : random_vision_weights(c, 2))
    short_names.emplace(name.substr(std::string("model.").size()), t);
  const vision_weights s = load_vision_weights(c, std::move(short_names), "short");
  CHECK(s.blocks[1].fc1_bias == w.blocks[1].fc1_bias);
}

TEST_CASE("vision weights: a missing, misshapen or unexpected tensor is refused by name", "[vision]") {
  const vision_config c = tiny_vision_config(40);
  SECTION("missing") {
    tensor_map t = random_vision_weights(c, 1);
    t.erase("model.visual.blocks.1.mlp.linear_fc2.bias");
    CHECK_THROWS_WITH(load_vision_weights(c, std::move(t), "model.safetensors"),
                      Catch::StartsWith("model.safetensors: 1 tensor problem:") &&
                          Catch::Contains("missing tensor 'model.visual.blocks.1.mlp.linear_fc2.bias'"));
  }
  SECTION("misshapen") {
    tensor_map t = random_vision_weights(c, 1);
    t["model.visual.blocks.0.attn.qkv.weight"] = tensor{{64, 64}, std::vector<float>(64 * 64)};
    CHECK_THROWS_WITH(load_vision_weights(c, std::move(t), "model.safetensors"),
                      Catch::Contains("tensor 'model.visual.blocks.0.attn.qkv.weight' has shape [64, 64], "
                                      "expected [192, 64]"));
  }
  SECTION("a deeper checkpoint than the config") {
    tensor_map t = random_vision_weights(c, 1);
    t["model.visual.blocks.2.norm1.weight"] = tensor{{64}, std::vector<float>(64)};
    CHECK_THROWS_WITH(load_vision_weights(c, std::move(t), "m"),
                      Catch::Contains("unexpected tensor 'model.visual.blocks.2.norm1.weight'"));
  }
  SECTION("a Qwen3-VL DeepStack merger") {
    tensor_map t = random_vision_weights(c, 1);
    t["model.visual.deepstack_merger_list.0.norm.weight"] = tensor{{256}, std::vector<float>(256)};
    CHECK_THROWS_WITH(
        load_vision_weights(c, std::move(t), "m"),
        Catch::Contains("unexpected tensor 'model.visual.deepstack_merger_list.0.norm.weight'"));
  }
  SECTION("no vision tensors at all") {
    tensor_map t;
    t["model.language_model.norm.weight"] = tensor{{4}, std::vector<float>(4)};
    CHECK_THROWS_WITH(load_vision_weights(c, std::move(t), "text-only"),
                      Catch::Contains("missing tensor 'model.visual.patch_embed.proj.weight'"));
  }
}
