// Tests for runtime/model/model_dir with Qwen3.5 MoE checkpoints: qwen35moe-tiny-mtp's weights
// written as Hugging Face writes them (fused experts, or experts one by one as the official
// checkpoints store the MTP block's), loaded back, compared with what was written and run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/log.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/engine/engine_weights.hpp"
#include "runtime/model/model_dir.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/qwen35_names.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/model/test_model_dir_checks.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

const model_config& moe_config() {
  static const model_config c = preset_config("qwen35moe-tiny-mtp");
  return c;
}

checkpoint_options small_ctx() {
  checkpoint_options o;
  o.max_position = 4096;
  return o;
}

// `w` with the routed experts of each block in `blocks` ("mtp.layers.0.") stored one by one:
// mlp.experts.{j}.{gate,up,down}_proj.weight in place of the fused gate_up_proj and down_proj.
tensor_map split_experts(const tensor_map& w, const std::vector<std::string>& blocks) {
  const model_config& c = moe_config();
  const std::int64_t i = c.expert_hidden, h = c.d_model;
  auto rows = [](const tensor& t, std::int64_t first, std::int64_t count, std::int64_t cols) {
    const auto at = t.data.begin() + first * cols;
    return tensor{{count, cols}, std::vector<float>(at, at + count * cols)};
  };
  tensor_map out = w;
  for (const std::string& block : blocks) {
    const std::string x = block + "mlp.experts.";
    const tensor gate_up = out.at(x + "gate_up_proj"), down = out.at(x + "down_proj");
    out.erase(x + "gate_up_proj");
    out.erase(x + "down_proj");
    for (std::int64_t j = 0; j < c.n_experts; ++j) {
      const std::string e = x + std::to_string(j) + ".";
      out[e + "gate_proj.weight"] = rows(gate_up, 2 * i * j, i, h);
      out[e + "up_proj.weight"] = rows(gate_up, 2 * i * j + i, i, h);
      out[e + "down_proj.weight"] = rows(down, h * j, h, i);
    }
  }
  return out;
}

// The blocks of qwen35moe-tiny-mtp: every layer and the draft layer.
std::vector<std::string> every_block() {
  std::vector<std::string> blocks = {"mtp.layers.0."};
  for (int l = 0; l < moe_config().n_layers; ++l) blocks.push_back("model.layers." + std::to_string(l) + ".");
  return blocks;
}

// The main and draft logits after a prefill and after each of a few greedy decode steps.
std::vector<std::vector<float>> run_logits(engine& e) {
  std::vector<std::vector<float>> out;
  e.prefill({1, 5, 9, 200, 3, 77, 12, 0, 255, 31, 64});
  for (int step = 0; step < 4; ++step) {
    out.push_back(e.last_logits());
    out.push_back(e.last_draft_logits());
    const std::vector<float>& l = e.last_logits();
    e.decode(static_cast<token_id>(std::max_element(l.begin(), l.end()) - l.begin()));
  }
  return out;
}

std::string load_error(const std::string& dir) {
  try {
    (void)load_model_dir(dir);
  } catch (const model_load_error& e) {
    return e.what();
  }
  FAIL("the checkpoint loaded");
  return {};
}

}  // namespace

TEST_CASE("F32 MoE checkpoints load bit for bit and run as the preset's weights", "[model_dir][moe]") {
  const model_config& c = moe_config();
  const tensor_map& w = test_weights(c, 41);
  checkpoint_options o = small_ctx();
  o.dtype = safetensors_dtype::f32;
  SECTION("multimodal, sharded") {}
  SECTION("flat, one file") {
    o.multimodal = false;
    o.shards = 0;
  }
  temp_dir dir("model-dir-moe");
  write_moe_checkpoint(dir.str(), c, w, o);
  const loaded_model m = load_model_dir(dir.str());
  check_config_read_back(m.config, c, o.max_position);
  CHECK(m.stored.empty());
  check_bit_equal(m.weights, w);

  engine from_dir(m.config, m.weights);
  engine from_weights(m.config, w);
  const auto got = run_logits(from_dir);
  CHECK(got == run_logits(from_weights));
  CHECK_FALSE(got[1].empty());  // the draft layer ran
}

TEST_CASE("BF16 MoE checkpoints keep every matrix, the experts' stacks too, as stored", "[model_dir][moe]") {
  const model_config& c = moe_config();
  const tensor_map rounded = round_to(test_weights(c, 41), safetensors_dtype::bf16);
  temp_dir dir("model-dir-moe");
  write_moe_checkpoint(dir.str(), c, rounded, small_ctx());
  const loaded_model m = load_model_dir(dir.str());
  check_config_read_back(m.config, c, 4096);
  for (const tensor_spec& s : qwen35_weight_specs(m.config)) {
    INFO(s.name);
    const bool matrices = s.shape.size() == 2 || s.name.find(".mlp.experts.") != std::string::npos;
    CHECK(m.stored.count(s.name) == (matrices ? 1u : 0u));
    CHECK(m.weights.count(s.name) == (matrices ? 0u : 1u));
  }
  CHECK(m.stored.at("mtp.layers.0.mlp.experts.gate_up_proj").shape ==
        std::vector<std::int64_t>{c.n_experts, 2 * c.expert_hidden, c.d_model});
  check_bit_equal(as_f32(m), rounded);

  // Through the stored kernels, whose sums run in another order than BLAS's: equal to rounding.
  engine stored(std::make_shared<const engine_weights>(m.config, m.weights, m.stored, kernels::backend::cpu,
                                                       m.stored_types));
  engine floats(m.config, rounded);
  const auto got = run_logits(stored), want = run_logits(floats);
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < 2; ++k) {  // after the prefill: the main and the draft logits
    INFO(k);
    REQUIRE(got[k].size() == want[k].size());
    float scale = 1.0f, worst = 0.0f;
    for (std::size_t i = 0; i < want[k].size(); ++i) {
      scale = std::max(scale, std::fabs(want[k][i]));
      worst = std::max(worst, std::fabs(got[k][i] - want[k][i]));
    }
    CHECK(worst < 2e-4f * scale);
  }
}

TEST_CASE("experts stored one by one are stacked into the fused form as float32", "[model_dir][moe]") {
  const model_config& c = moe_config();
  const tensor_map& w = test_weights(c, 41);
  const std::string gate_up = "mtp.layers.0.mlp.experts.gate_up_proj";
  SECTION("the MTP block's, F32: the same bits and logits as the fused checkpoint") {
    checkpoint_options o = small_ctx();
    o.dtype = safetensors_dtype::f32;
    temp_dir dir("model-dir-moe");
    write_moe_checkpoint(dir.str(), c, split_experts(w, {"mtp.layers.0."}), o);
    log_capture log;
    const loaded_model m = load_model_dir(dir.str());
    check_config_read_back(m.config, c, o.max_position);
    check_bit_equal(m.weights, w);
    const std::string parts = std::to_string(3 * c.n_experts);  // gate, up and down of each
    CHECK(log.contains("2 stacked from " + parts + " per-expert tensors and converted to float32"));

    temp_dir fused_dir("model-dir-moe");
    write_moe_checkpoint(fused_dir.str(), c, w, o);
    const loaded_model fused = load_model_dir(fused_dir.str());
    engine from_split(m.config, m.weights);
    engine from_fused(fused.config, fused.weights);
    CHECK(run_logits(from_split) == run_logits(from_fused));
  }
  SECTION("every block's, BF16: float32 stacks of the rounded values, under the multimodal prefix too") {
    const tensor_map rounded = round_to(w, safetensors_dtype::bf16);
    temp_dir dir("model-dir-moe");
    write_moe_checkpoint(dir.str(), c, split_experts(rounded, every_block()), small_ctx());
    log_capture log;
    const loaded_model m = load_model_dir(dir.str());
    for (const std::string& block : every_block()) {
      INFO(block);
      for (const char* fused : {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}) {
        CHECK(m.weights.count(block + fused) == 1);
        CHECK(m.stored.count(block + fused) == 0);
      }
      CHECK(m.stored.count(block + "mlp.shared_expert.up_proj.weight") == 1);
    }
    check_bit_equal(as_f32(m), rounded);
    const std::size_t blocks = every_block().size();
    CHECK(log.contains(std::to_string(2 * blocks) + " stacked from " +
                       std::to_string(3 * c.n_experts * blocks) + " per-expert tensors"));
  }
  SECTION("both forms: the fused one is read") {
    tensor_map both = split_experts(w, {"mtp.layers.0."});
    both[gate_up] = w.at(gate_up);
    both["mtp.layers.0.mlp.experts.down_proj"] = w.at("mtp.layers.0.mlp.experts.down_proj");
    both["mtp.layers.0.mlp.experts.0.gate_proj.weight"].data.assign(c.expert_hidden * c.d_model, 9.0f);
    checkpoint_options o = small_ctx();
    o.dtype = safetensors_dtype::f32;
    temp_dir dir("model-dir-moe");
    write_moe_checkpoint(dir.str(), c, both, o);
    check_bit_equal(load_model_dir(dir.str()).weights, w);
  }
}

TEST_CASE("MoE checkpoints that do not fit their config are refused", "[model_dir][moe]") {
  const model_config& c = moe_config();
  const tensor_map rounded = round_to(test_weights(c, 41), safetensors_dtype::bf16);
  temp_dir dir("model-dir-moe");
  SECTION("num_experts_per_tok above num_experts, naming both") {
    write_moe_checkpoint(dir.str(), c, rounded);
    json j = qwen35moe_config_json(c);
    j["text_config"]["num_experts_per_tok"] = c.n_experts + 1;
    std::ofstream(dir.file("config.json")) << j.dump();
    CHECK_THAT(load_error(dir.str()),
               Contains("config.json") &&
                   Contains("'text_config.num_experts_per_tok' = " + std::to_string(c.n_experts + 1)) &&
                   Contains("'text_config.num_experts' = " + std::to_string(c.n_experts)));
  }
  SECTION("a dense model_type with experts") {
    write_moe_checkpoint(dir.str(), c, rounded);
    json j = qwen35moe_config_json(c);
    j["model_type"] = "qwen3_5";
    j["text_config"]["model_type"] = "qwen3_5_text";
    j["architectures"] = {"Qwen3_5ForConditionalGeneration"};
    j["text_config"]["intermediate_size"] = c.expert_hidden;
    std::ofstream(dir.file("config.json")) << j.dump();
    CHECK_THAT(load_error(dir.str()),
               Contains("config.json") &&
                   Contains("'text_config.num_experts' = " + std::to_string(c.n_experts)) &&
                   Contains("inconsistent with model_type 'qwen3_5'"));
  }
  SECTION("expert 5's up_proj missing from the per-expert form") {
    tensor_map split = split_experts(rounded, {"mtp.layers.0."});
    split.erase("mtp.layers.0.mlp.experts.5.up_proj.weight");
    split.erase("mtp.layers.0.mlp.experts.6.gate_proj.weight");
    write_moe_checkpoint(dir.str(), c, split);
    CHECK_THAT(load_error(dir.str()),
               Contains(dir.str()) && Contains("missing tensor 'mtp.layers.0.mlp.experts.5.up_proj.weight'"));
  }
  SECTION("a trunk layer's expert missing is named by its text-only name and the stored one") {
    tensor_map split = split_experts(rounded, every_block());
    split.erase("model.layers.2.mlp.experts.7.down_proj.weight");
    write_moe_checkpoint(dir.str(), c, split);
    CHECK_THAT(load_error(dir.str()),
               Contains("missing tensor 'model.layers.2.mlp.experts.7.down_proj.weight'") &&
                   Contains("'model.language_model.layers.2.mlp.experts.7.down_proj.weight'"));
  }
  SECTION("a fused tensor missing, in neither form") {
    tensor_map w = rounded;
    w.erase("model.layers.1.mlp.experts.down_proj");
    write_moe_checkpoint(dir.str(), c, w);
    CHECK_THAT(load_error(dir.str()), Contains("missing tensor 'model.layers.1.mlp.experts.down_proj'") &&
                                          Contains("'model.layers.1.mlp.experts.0.down_proj.weight'"));
  }
  SECTION("an expert of the wrong shape, with both shapes") {
    tensor_map split = split_experts(rounded, {"mtp.layers.0."});
    split["mtp.layers.0.mlp.experts.3.down_proj.weight"] =
        tensor{{32, 64}, std::vector<float>(32 * 64, 0.0f)};
    write_moe_checkpoint(dir.str(), c, split);
    CHECK_THAT(
        load_error(dir.str()),
        Contains("'mtp.layers.0.mlp.experts.3.down_proj.weight' has shape [32, 64], expected [64, 32]"));
  }
}
