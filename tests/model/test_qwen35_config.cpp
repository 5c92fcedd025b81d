// Tests for runtime/model/qwen35_config: config.json documents in the forms Hugging Face writes,
// read into model_config.
#include <catch2/catch.hpp>

#include <string>

#include "runtime/model/loaded_model.hpp"
#include "runtime/model/qwen35_config.hpp"
#include "tests/model/test_model_dir_checks.hpp"
#include "tests/support/checkpoint_writer.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

std::string config_error(const json& j) {
  try {
    (void)qwen35_config_from_json(j, "dir/config.json");
  } catch (const model_load_error& e) {
    return e.what();
  }
  FAIL("the config was accepted");
  return {};
}

checkpoint_options flat() {
  checkpoint_options o;
  o.multimodal = false;
  return o;
}

}  // namespace

TEST_CASE("nested and flat configs read as the same model_config", "[model_dir]") {
  for (const std::string preset : {"qwen35-tiny", "qwen35-tiny-mtp", "qwen35-small"}) {
    INFO(preset);
    const model_config c = preset_config(preset);
    check_config_read_back(qwen35_config_from_json(qwen35_config_json(c), "nested"), c, 262144);
    check_config_read_back(qwen35_config_from_json(qwen35_config_json(c, flat()), "flat"), c, 262144);
  }
}

TEST_CASE("the values of Qwen3.5-0.8B's config.json", "[model_dir]") {
  // The text_config of Qwen/Qwen3.5-0.8B (the shared reference qwen35.md, section 1), abridged.
  json text = {{"model_type", "qwen3_5_text"},
               {"hidden_size", 1024},
               {"num_hidden_layers", 24},
               {"num_attention_heads", 8},
               {"num_key_value_heads", 2},
               {"head_dim", 256},
               {"linear_num_key_heads", 16},
               {"linear_num_value_heads", 16},
               {"linear_key_head_dim", 128},
               {"linear_value_head_dim", 128},
               {"linear_conv_kernel_dim", 4},
               {"intermediate_size", 3584},
               {"rms_norm_eps", 1e-6},
               {"vocab_size", 248320},
               {"tie_word_embeddings", true},
               {"mtp_num_hidden_layers", 1},
               {"max_position_embeddings", 262144},
               {"attn_output_gate", true},
               {"full_attention_interval", 4},
               {"rope_parameters",
                {{"mrope_interleaved", true},
                 {"mrope_section", {11, 11, 10}},
                 {"rope_type", "default"},
                 {"rope_theta", 10000000},
                 {"partial_rotary_factor", 0.25}}}};
  const json j = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                  {"model_type", "qwen3_5"},
                  {"tie_word_embeddings", true},
                  {"text_config", text},
                  {"vision_config", {{"depth", 12}}}};
  const model_config c = qwen35_config_from_json(j, "0.8B");
  CHECK(c.d_model == 1024);
  CHECK(c.n_layers == 24);
  CHECK(c.pattern == "GGGAGGGAGGGAGGGAGGGAGGGA");
  CHECK(c.n_q == 8);
  CHECK(c.n_kv == 2);
  CHECK(c.head_dim == 256);
  CHECK(c.rope_dims == 64);
  CHECK(c.rope_base == 1e7f);
  CHECK(c.gdn_hk == 16);
  CHECK(c.gdn_hv == 16);
  CHECK(c.gdn_dk == 128);
  CHECK(c.conv_channels() == 6144);
  CHECK(c.mlp_hidden == 3584);
  CHECK(c.vocab == 248320);
  CHECK(c.tied_embeddings);
  CHECK(c.mtp);
  CHECK(c.ctx_size == qwen35_default_ctx);
  CHECK(c.grid == 1024);
  CHECK(c.gdn_chunk == 64);

  // The preset of that shape (random weights, for measuring the engine at a real model's size) is
  // this model without its draft layer, served as a checkpoint would be.
  model_config preset = preset_config("qwen35-0.8b-shape");
  CHECK_FALSE(preset.mtp);
  preset.mtp = true;
  check_same_shape(c, preset);
  CHECK(preset.rope_dims == c.rope_dims);
  CHECK(preset.ctx_size == c.ctx_size);
  CHECK(preset.grid == c.grid);
  CHECK(preset.gdn_chunk == c.gdn_chunk);
}

TEST_CASE("defaults: full_attention_interval 4, partial_rotary_factor 0.25, no MTP, untied", "[model_dir]") {
  json j = qwen35_config_json(preset_config("qwen35-tiny"), flat());
  for (const char* key : {"layer_types", "full_attention_interval", "partial_rotary_factor",
                          "mtp_num_hidden_layers", "tie_word_embeddings", "max_position_embeddings"})
    j.erase(key);
  j["num_hidden_layers"] = 6;
  const model_config c = qwen35_config_from_json(j, "defaults");
  CHECK(c.pattern == "GGGAGG");
  CHECK(c.rope_dims == 8);  // 32 * 0.25
  CHECK_FALSE(c.mtp);
  CHECK_FALSE(c.tied_embeddings);
  CHECK(c.ctx_size == qwen35_default_ctx);
}

TEST_CASE("layer_types wins over full_attention_interval", "[model_dir]") {
  model_config want = preset_config("qwen35-tiny");
  want.pattern = "GAGGAGGA";
  json j = qwen35_config_json(want);
  j["text_config"]["full_attention_interval"] = 4;
  CHECK(qwen35_config_from_json(j, "x").pattern == "GAGGAGGA");
}

TEST_CASE("a model_type alone or architectures alone identify the model", "[model_dir]") {
  json j = qwen35_config_json(preset_config("qwen35-tiny"), flat());
  j.erase("architectures");
  CHECK_NOTHROW(qwen35_config_from_json(j, "x"));
  j["architectures"] = {"Qwen3_5ForCausalLM"};
  j.erase("model_type");
  CHECK_NOTHROW(qwen35_config_from_json(j, "x"));
  j["architectures"] = {"LlamaForCausalLM"};
  CHECK_THAT(config_error(j), Contains("dir/config.json") && Contains("no 'model_type'"));
}

TEST_CASE("config errors name the file and the key", "[model_dir]") {
  const json good = qwen35_config_json(preset_config("qwen35-tiny"));
  json j = good;
  SECTION("another model") {
    j["model_type"] = "qwen3_next";
    CHECK_THAT(config_error(j), Contains("dir/config.json: model_type 'qwen3_next' is not supported"));
  }
  SECTION("a mistyped key") {
    j["text_config"]["hidden_size"] = "64";
    CHECK_THAT(config_error(j), Contains("'text_config.hidden_size' must be an integer"));
  }
  SECTION("layer_types of the wrong length") {
    j["text_config"]["layer_types"].erase(0);
    CHECK_THAT(config_error(j), Contains("'text_config.layer_types' has 7 entries, num_hidden_layers is 8"));
  }
  SECTION("an unknown layer type") {
    j["text_config"]["layer_types"][1] = "sliding_attention";
    CHECK_THAT(config_error(j), Contains("sliding_attention"));
  }
  SECTION("rope scaling") {
    j["text_config"]["rope_parameters"]["rope_type"] = "yarn";
    CHECK_THAT(config_error(j), Contains("rope_type") && Contains("yarn"));
  }
  SECTION("no rope_theta") {
    j["text_config"]["rope_parameters"].erase("rope_theta");
    CHECK_THAT(config_error(j), Contains("rope_theta"));
  }
  SECTION("a partial rotary factor giving an odd dimension count") {
    j["text_config"]["partial_rotary_factor"] = 0.1;
    j["text_config"]["rope_parameters"]["partial_rotary_factor"] = 0.1;
    CHECK_THAT(config_error(j), Contains("partial_rotary_factor"));
  }
  SECTION("attention biases") {
    j["text_config"]["attention_bias"] = true;
    CHECK_THAT(config_error(j), Contains("attention_bias"));
  }
  SECTION("value heads not a multiple of key heads") {
    j["text_config"]["linear_num_value_heads"] = 3;
    CHECK_THAT(config_error(j), Contains("dir/config.json") && Contains("gdn_hv"));
  }
  SECTION("not an object") { CHECK_THAT(config_error(json::array()), Contains("not a JSON object")); }
}

TEST_CASE("tie_word_embeddings is read at the top level of a nested config", "[model_dir]") {
  json j = qwen35_config_json(preset_config("qwen35-tiny"));
  j["tie_word_embeddings"] = true;
  j["text_config"].erase("tie_word_embeddings");
  CHECK(qwen35_config_from_json(j, "x").tied_embeddings);
  j.erase("tie_word_embeddings");
  j["text_config"]["tie_word_embeddings"] = true;
  CHECK(qwen35_config_from_json(j, "x").tied_embeddings);
}

TEST_CASE("mtp_num_hidden_layers of 1 or more turns the draft layer on", "[model_dir]") {
  json j = qwen35_config_json(preset_config("qwen35-tiny"));
  for (const int layers : {0, 1, 2}) {
    j["text_config"]["mtp_num_hidden_layers"] = layers;
    CHECK(qwen35_config_from_json(j, "x").mtp == (layers >= 1));
  }
}

TEST_CASE("Qwen3.5 MoE configs read the experts' keys, nested and flat", "[model_dir][moe]") {
  for (const std::string preset : {"qwen35moe-tiny", "qwen35moe-tiny-mtp", "qwen35moe-small"}) {
    INFO(preset);
    const model_config c = preset_config(preset);
    check_config_read_back(qwen35_config_from_json(qwen35moe_config_json(c), "nested"), c, 262144);
    check_config_read_back(qwen35_config_from_json(qwen35moe_config_json(c, flat()), "flat"), c, 262144);
  }
}

TEST_CASE("the values of Qwen3.5-35B-A3B's config.json", "[model_dir][moe]") {
  // model-formats.md 2.1 and 2.2: 40 layers, 256 experts of which 8 run, expert and shared widths 512.
  const json text = {{"model_type", "qwen3_5_moe_text"},
                     {"hidden_size", 2048},
                     {"num_hidden_layers", 40},
                     {"num_attention_heads", 16},
                     {"num_key_value_heads", 2},
                     {"head_dim", 256},
                     {"linear_num_key_heads", 16},
                     {"linear_num_value_heads", 32},
                     {"linear_key_head_dim", 128},
                     {"linear_value_head_dim", 128},
                     {"num_experts", 256},
                     {"num_experts_per_tok", 8},
                     {"moe_intermediate_size", 512},
                     {"shared_expert_intermediate_size", 512},
                     {"router_aux_loss_coef", 0.001},
                     {"vocab_size", 248320},
                     {"mtp_num_hidden_layers", 1},
                     {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000000}}}};
  const json j = {{"architectures", {"Qwen3_5MoeForConditionalGeneration"}},
                  {"model_type", "qwen3_5_moe"},
                  {"text_config", text}};
  const model_config c = qwen35_config_from_json(j, "35B-A3B");
  CHECK(c.is_moe());
  CHECK(c.n_experts == 256);
  CHECK(c.experts_used == 8);
  CHECK(c.expert_hidden == 512);
  CHECK(c.mlp_hidden == 512);
  CHECK(c.shared_hidden == 512);
  CHECK(c.experts_fused);
  CHECK(c.pattern == "GGGAGGGAGGGAGGGAGGGAGGGAGGGAGGGAGGGAGGGA");
  CHECK(c.gdn_hv == 32);
  CHECK(c.rope_dims == 64);
  CHECK(c.mtp);
}

TEST_CASE("an architecture alone identifies a MoE model, keys that make layers dense do not",
          "[model_dir][moe]") {
  const model_config moe = preset_config("qwen35moe-tiny");
  json j = qwen35moe_config_json(moe, flat());
  j.erase("model_type");
  CHECK(qwen35_config_from_json(j, "x").n_experts == moe.n_experts);
  SECTION("the values that keep every layer sparse") {
    j["decoder_sparse_step"] = 1;
    j["mlp_only_layers"] = json::array();
    j["norm_topk_prob"] = true;
    CHECK(qwen35_config_from_json(j, "x").n_experts == moe.n_experts);
  }
  SECTION("decoder_sparse_step 2") {
    j["decoder_sparse_step"] = 2;
    CHECK_THAT(config_error(j),
               Contains("dir/config.json: 'decoder_sparse_step' = 2 makes some layers dense"));
  }
  SECTION("mlp_only_layers") {
    j["mlp_only_layers"] = {3};
    CHECK_THAT(config_error(j), Contains("'mlp_only_layers' = [3] makes those layers dense"));
  }
  SECTION("norm_topk_prob false") {
    j["norm_topk_prob"] = false;
    CHECK_THAT(config_error(j), Contains("'norm_topk_prob' is false"));
  }
  SECTION("num_experts_per_tok above num_experts") {
    j["num_experts"] = 8;
    j["num_experts_per_tok"] = 12;
    CHECK_THAT(config_error(j), Contains("'num_experts_per_tok' = 12 is more than 'num_experts' = 8"));
  }
  SECTION("no experts") {
    j["num_experts"] = 0;
    CHECK_THAT(config_error(j), Contains("'num_experts' must be at least 1"));
  }
  SECTION("a missing key") {
    j.erase("moe_intermediate_size");
    CHECK_THAT(config_error(j), Contains("dir/config.json: 'moe_intermediate_size' is missing"));
  }
}
