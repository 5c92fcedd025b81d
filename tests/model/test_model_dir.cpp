// Tests for runtime/model/model_dir: checkpoint directories written in each form the loader
// reads, loaded back and compared with what was written.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/core/log.hpp"
#include "runtime/model/model_dir.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/model/qwen35_names.hpp"
#include "runtime/model/model_weights.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/model/test_model_dir_checks.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace fs = std::filesystem;

TEST_CASE("qwen35-tiny checkpoints rounded to BF16 load back bit for bit", "[model_dir]") {
  for (const std::string preset : {"qwen35-tiny", "qwen35-tiny-mtp"}) {
    INFO(preset);
    const model_config c = preset_config(preset);
    const tensor_map rounded = round_to(random_weights(c, 7), safetensors_dtype::bf16);
    temp_dir dir("model-dir");
    write_checkpoint(dir.str(), c, rounded);
    REQUIRE(fs::exists(dir.file("model.safetensors.index.json")));
    REQUIRE(fs::exists(dir.file("model-00003-of-00003.safetensors")));

    const loaded_model m = load_model_dir(dir.str());
    check_config_read_back(m.config, c, 262144);
    check_bit_equal(as_f32(m), rounded);
    CHECK(as_f32(m).count("model.visual.patch_embed.proj.weight") == 0);
    CHECK(as_f32(m).count("mtp.fc.weight") == (c.mtp ? 1u : 0u));
    CHECK_NOTHROW(check_tensors(as_f32(m), weight_specs(m.config), "loaded"));
    CHECK(m.source == dir.str());
    CHECK(m.config.preset == dir.path.filename().string());
    CHECK(load_model_dir(dir.str() + "/").config.preset == dir.path.filename().string());
    CHECK(m.tokenizer.is_null());
    CHECK(m.tokenizer_config.is_null());
    CHECK(m.chat_template.empty());
  }
}

TEST_CASE("the flat text-only form and the single-file form load the same", "[model_dir]") {
  const model_config c = preset_config("qwen35-tiny-mtp");
  const tensor_map rounded = round_to(random_weights(c, 11), safetensors_dtype::bf16);
  SECTION("flat config, text-only names, sharded") {
    checkpoint_options o;
    o.multimodal = false;
    o.visual = false;
    temp_dir dir("model-dir");
    write_checkpoint(dir.str(), c, rounded, o);
    const loaded_model m = load_model_dir(dir.str());
    check_config_read_back(m.config, c, o.max_position);
    check_bit_equal(as_f32(m), rounded);
  }
  SECTION("one model.safetensors, no index") {
    checkpoint_options o;
    o.shards = 0;
    temp_dir dir("model-dir");
    write_checkpoint(dir.str(), c, rounded, o);
    REQUIRE(!fs::exists(dir.file("model.safetensors.index.json")));
    const loaded_model m = load_model_dir(dir.str());
    check_config_read_back(m.config, c, o.max_position);
    check_bit_equal(as_f32(m), rounded);
  }
}

TEST_CASE("F16 and F32 shards load exactly", "[model_dir]") {
  const model_config c = preset_config("qwen35-tiny");
  const tensor_map w = random_weights(c, 3);
  for (const safetensors_dtype d : {safetensors_dtype::f16, safetensors_dtype::f32}) {
    INFO(to_string(d));
    checkpoint_options o;
    o.dtype = d;
    temp_dir dir("model-dir");
    write_checkpoint(dir.str(), c, w, o);
    const loaded_model m = load_model_dir(dir.str());
    check_bit_equal(as_f32(m), round_to(w, d));
    if (d == safetensors_dtype::f32) check_bit_equal(as_f32(m), w);
  }
}

TEST_CASE("tied embeddings: no lm_head needed, one present is not read", "[model_dir]") {
  model_config c = preset_config("qwen35-tiny");
  c.tied_embeddings = true;
  const tensor_map rounded = round_to(random_weights(c, 5), safetensors_dtype::bf16);
  REQUIRE(rounded.count("lm_head.weight") == 0);
  temp_dir dir("model-dir");
  SECTION("absent") { write_checkpoint(dir.str(), c, rounded); }
  SECTION("present anyway") {
    tensor_map with_head = rounded;
    with_head["lm_head.weight"] = rounded.at("model.embed_tokens.weight");
    write_checkpoint(dir.str(), c, with_head);
  }
  const loaded_model m = load_model_dir(dir.str());
  CHECK(m.config.tied_embeddings);
  check_bit_equal(as_f32(m), rounded);
}

TEST_CASE("conv1d given as [C, K] is read as [C, 1, K]", "[model_dir]") {
  const model_config c = preset_config("qwen35-tiny");
  const tensor_map rounded = round_to(random_weights(c, 9), safetensors_dtype::bf16);
  tensor_map squeezed = rounded;
  tensor& conv = squeezed.at("model.layers.0.linear_attn.conv1d.weight");
  conv.shape = {conv.shape[0], conv.shape[2]};
  temp_dir dir("model-dir");
  write_checkpoint(dir.str(), c, squeezed);
  check_bit_equal(as_f32(load_model_dir(dir.str())), rounded);
}

TEST_CASE("a config with MTP but weights without mtp.* loads without MTP and says so", "[model_dir]") {
  const model_config with_mtp = preset_config("qwen35-tiny-mtp");
  const tensor_map rounded =
      round_to(random_weights(preset_config("qwen35-tiny"), 4), safetensors_dtype::bf16);
  temp_dir dir("model-dir");
  write_checkpoint(dir.str(), with_mtp, rounded);
  log_capture log;
  const loaded_model m = load_model_dir(dir.str());
  CHECK_FALSE(m.config.mtp);
  check_bit_equal(as_f32(m), rounded);
  CHECK(log.contains("loading without MTP"));
}

TEST_CASE("mtp.* tensors are not read when the config has no MTP", "[model_dir]") {
  const tensor_map rounded =
      round_to(random_weights(preset_config("qwen35-tiny-mtp"), 4), safetensors_dtype::bf16);
  temp_dir dir("model-dir");
  write_checkpoint(dir.str(), preset_config("qwen35-tiny"), rounded);
  const loaded_model m = load_model_dir(dir.str());
  CHECK_FALSE(m.config.mtp);
  CHECK(as_f32(m).count("mtp.fc.weight") == 0);
  CHECK(as_f32(m).size() == qwen35_weight_specs(preset_config("qwen35-tiny")).size());
}

TEST_CASE("ctx_size is capped at max_position_embeddings and the grid fits it", "[model_dir]") {
  const model_config c = preset_config("qwen35-tiny");
  const tensor_map rounded = round_to(random_weights(c, 1), safetensors_dtype::bf16);
  for (const int max_position : {4096, 512}) {
    checkpoint_options o;
    o.max_position = max_position;
    temp_dir dir("model-dir");
    write_checkpoint(dir.str(), c, rounded, o);
    const loaded_model m = load_model_dir(dir.str());
    check_config_read_back(m.config, c, max_position);
    CHECK_NOTHROW(m.config.validate());
  }
}

TEST_CASE("tokenizer files and the chat template are read when present", "[model_dir]") {
  const model_config c = preset_config("qwen35-tiny");
  const tensor_map rounded = round_to(random_weights(c, 1), safetensors_dtype::bf16);
  checkpoint_options o;
  o.tokenizer_files = true;
  temp_dir dir("model-dir");
  SECTION("tokenizer_config's chat_template string") {
    write_checkpoint(dir.str(), c, rounded, o);
    const loaded_model m = load_model_dir(dir.str());
    CHECK(m.tokenizer == test_tokenizer_json());
    CHECK(m.tokenizer_config == test_tokenizer_config_json());
    CHECK(m.chat_template == test_tokenizer_config_json()["chat_template"].get<std::string>());
  }
  SECTION("chat_template.jinja wins over tokenizer_config") {
    o.chat_template_file = true;
    write_checkpoint(dir.str(), c, rounded, o);
    CHECK(load_model_dir(dir.str()).chat_template == test_chat_template_file);
  }
  SECTION("the list form's default entry") {
    write_checkpoint(dir.str(), c, rounded, o);
    nlohmann::json tc = test_tokenizer_config_json();
    tc["chat_template"] = {{{"name", "tool_use"}, {"template", "TOOLS"}},
                           {{"name", "default"}, {"template", "DEFAULT"}}};
    std::ofstream(dir.file("tokenizer_config.json")) << tc.dump();
    CHECK(load_model_dir(dir.str()).chat_template == "DEFAULT");
  }
}

TEST_CASE("load_model reads a directory as a checkpoint", "[model_dir]") {
  const model_config c = preset_config("qwen35-tiny");
  const tensor_map rounded = round_to(random_weights(c, 2), safetensors_dtype::bf16);
  temp_dir dir("model-dir");
  write_checkpoint(dir.str(), c, rounded);
  check_bit_equal(as_f32(load_model(dir.str())), rounded);
}

TEST_CASE("A_log and dt_bias stored as F32 in a BF16 checkpoint keep their float values", "[model_dir]") {
  const model_config c = preset_config("qwen35-tiny");
  const tensor_map w = random_weights(c, 13);
  checkpoint_options o;
  o.f32_ssm_params = true;
  temp_dir dir("model-dir");
  write_checkpoint(dir.str(), c, w, o);
  const loaded_model m = load_model_dir(dir.str());
  tensor_map want = round_to(w, safetensors_dtype::bf16);
  for (auto& [name, t] : want)
    if (name.find("A_log") != std::string::npos || name.find("dt_bias") != std::string::npos) t = w.at(name);
  check_bit_equal(as_f32(m), want);
  CHECK(as_f32(m).at("model.layers.0.linear_attn.A_log").data !=
        round_to(w, safetensors_dtype::bf16).at("model.layers.0.linear_attn.A_log").data);
}
