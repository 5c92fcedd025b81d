// Tests for runtime/model/model_dir and model_load: every way a checkpoint directory can be
// wrong, each checked for a model_load_error whose message names the file and what is wrong.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/model/model_dir.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/model/model_weights.hpp"
#include "tests/model/test_model_dir_checks.hpp"
#include "tests/support/checkpoint_writer.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

// A good qwen35-tiny checkpoint (3 BF16 shards, multimodal names) in a fresh directory.
struct checkpoint_fixture {
  model_config config = preset_config("qwen35-tiny");
  tensor_map weights = random_weights(config, 21);
  temp_dir dir{"model-dir-error"};

  void write(const tensor_map& w, const checkpoint_options& o = {}) {
    write_checkpoint(dir.str(), config, w, o);
  }
  void write() { write(weights); }

  json config_json() const {
    std::ifstream in(dir.file("config.json"));
    return json::parse(in);
  }
  void set_config(const json& j) const { std::ofstream(dir.file("config.json")) << j.dump(); }

  // The message of the model_load_error that loading throws; fails the test when nothing throws.
  std::string load_error() const {
    try {
      (void)load_model_dir(dir.str());
    } catch (const model_load_error& e) {
      return e.what();
    }
    FAIL("the checkpoint loaded");
    return {};
  }
  // The shard the index puts `stored_name` in.
  std::string shard_of(const std::string& stored_name) const {
    std::ifstream in(dir.file("model.safetensors.index.json"));
    return json::parse(in)["weight_map"][stored_name].get<std::string>();
  }
};

}  // namespace

TEST_CASE("an unknown model_type is refused naming it and the file", "[model_dir]") {
  checkpoint_fixture f;
  f.write();
  json j = f.config_json();
  SECTION("top level") { j["model_type"] = "llama"; }
  SECTION("text_config") { j["text_config"]["model_type"] = "llama"; }
  f.set_config(j);
  const std::string m = f.load_error();
  CHECK_THAT(m, Contains("'llama'") && Contains(f.dir.file("config.json")));
}

namespace {

// A good qwen35moe-tiny checkpoint (BF16 shards, the MoE config.json).
struct moe_checkpoint_fixture : checkpoint_fixture {
  moe_checkpoint_fixture() {
    config = preset_config("qwen35moe-tiny");
    weights = random_weights(config, 21);
    write();
    set_config(qwen35moe_config_json(config));
  }
};

}  // namespace

TEST_CASE("mixture-of-experts configs are read", "[model_dir][moe]") {
  moe_checkpoint_fixture f;
  SECTION("qwen3_5_moe, the experts' keys under text_config") {}
  SECTION("the flat qwen3_5_moe_text form") {
    checkpoint_options o;
    o.multimodal = false;
    f.write(f.weights, o);
    f.set_config(qwen35moe_config_json(f.config, o));
  }
  const loaded_model m = load_model_dir(f.dir.str());
  CHECK(m.config.n_experts == f.config.n_experts);
  CHECK(m.config.experts_used == f.config.experts_used);
  CHECK(m.config.expert_hidden == f.config.expert_hidden);
  CHECK(m.config.shared_hidden == f.config.shared_hidden);
}

TEST_CASE("inconsistent mixture-of-experts configs are refused", "[model_dir][moe]") {
  moe_checkpoint_fixture f;
  json j = f.config_json();
  std::string want;
  SECTION("num_experts in a dense config") {
    j["model_type"] = "qwen3_5";
    j["text_config"]["model_type"] = "qwen3_5_text";
    j["architectures"] = {"Qwen3_5ForConditionalGeneration"};
    want = "'text_config.num_experts' = " + std::to_string(f.config.n_experts) +
           " is inconsistent with model_type 'qwen3_5', a dense model";
  }
  SECTION("a MoE model_type over a dense text_config") {
    j["text_config"]["model_type"] = "qwen3_5_text";
    want =
        "model_type 'qwen3_5_moe' is a mixture-of-experts model but text_config.model_type 'qwen3_5_text' "
        "is a dense model";
  }
  SECTION("a MoE model_type with a dense architecture") {
    j["architectures"] = {"Qwen3_5ForConditionalGeneration"};
    want = "architecture 'Qwen3_5ForConditionalGeneration' is a dense model";
  }
  SECTION("a missing expert key") {
    j["text_config"].erase("shared_expert_intermediate_size");
    want = "'text_config.shared_expert_intermediate_size' is missing";
  }
  f.set_config(j);
  CHECK_THAT(f.load_error(), Contains(want) && Contains(f.dir.file("config.json")));
}

TEST_CASE("an ungated attention is refused", "[model_dir]") {
  checkpoint_fixture f;
  f.write();
  json j = f.config_json();
  j["text_config"]["attn_output_gate"] = false;
  f.set_config(j);
  CHECK_THAT(f.load_error(), Contains("attn_output_gate"));
}

TEST_CASE("a missing config key is named with its path", "[model_dir]") {
  checkpoint_fixture f;
  f.write();
  json j = f.config_json();
  j["text_config"].erase("linear_num_value_heads");
  f.set_config(j);
  CHECK_THAT(f.load_error(), Contains("'text_config.linear_num_value_heads' is missing"));
}

TEST_CASE("a missing tensor is named", "[model_dir]") {
  checkpoint_fixture f;
  tensor_map w = f.weights;
  w.erase("model.layers.2.linear_attn.A_log");
  f.write(w);
  CHECK_THAT(f.load_error(), Contains("missing tensor 'model.layers.2.linear_attn.A_log'"));
}

TEST_CASE("a mis-shaped tensor is named with both shapes", "[model_dir]") {
  checkpoint_fixture f;
  tensor_map w = f.weights;
  w["model.layers.3.self_attn.k_proj.weight"] = tensor{{32, 64}, std::vector<float>(32 * 64, 0.0f)};
  f.write(w);
  const std::string m = f.load_error();
  CHECK_THAT(
      m,
      Contains(
          "'model.language_model.layers.3.self_attn.k_proj.weight' has shape [32, 64], expected [64, 64]"));
  CHECK_THAT(m, Contains(f.shard_of("model.language_model.layers.3.self_attn.k_proj.weight")));
}

TEST_CASE("an unsupported dtype is named with the file and the tensor", "[model_dir]") {
  checkpoint_fixture f;
  tensor_map w = f.weights;
  w.erase("model.norm.weight");
  f.write(w);
  const std::string name = "model.language_model.norm.weight";
  write_raw_safetensors(f.dir.file("model-extra.safetensors"),
                        {{name, {{"dtype", "I8"}, {"shape", {64}}, {"data_offsets", {0, 64}}}}},
                        std::string(64, '\1'));
  std::ifstream in(f.dir.file("model.safetensors.index.json"));
  json index = json::parse(in);
  index["weight_map"][name] = "model-extra.safetensors";
  std::ofstream(f.dir.file("model.safetensors.index.json")) << index.dump();
  const std::string m = f.load_error();
  CHECK_THAT(m, Contains("model-extra.safetensors") && Contains("'" + name + "'") && Contains("dtype I8"));
}

TEST_CASE("a truncated shard is named", "[model_dir]") {
  checkpoint_fixture f;
  f.write();
  const std::string shard = f.dir.file("model-00002-of-00003.safetensors");
  fs::resize_file(shard, fs::file_size(shard) / 2);
  CHECK_THAT(f.load_error(), Contains(shard) && Contains("truncated"));
}

TEST_CASE("a zero-byte shard is an error, not a crash", "[model_dir]") {
  checkpoint_fixture f;
  f.write();
  const std::string shard = f.dir.file("model-00001-of-00003.safetensors");
  fs::resize_file(shard, 0);
  CHECK_THAT(f.load_error(), Contains(shard) && Contains("0 bytes"));
}

TEST_CASE("a missing shard is named", "[model_dir]") {
  checkpoint_fixture f;
  f.write();
  fs::remove(f.dir.file("model-00003-of-00003.safetensors"));
  CHECK_THAT(f.load_error(), Contains("shard 'model-00003-of-00003.safetensors' is missing") &&
                                 Contains("model.safetensors.index.json"));
}

TEST_CASE("a tensor the index lists but its shard lacks is named", "[model_dir]") {
  checkpoint_fixture f;
  f.write();
  std::ifstream in(f.dir.file("model.safetensors.index.json"));
  json index = json::parse(in);
  const std::string name = "model.language_model.layers.0.mlp.up_proj.weight";
  const std::string right = index["weight_map"][name];
  index["weight_map"][name] = right == "model-00001-of-00003.safetensors"
                                  ? "model-00002-of-00003.safetensors"
                                  : "model-00001-of-00003.safetensors";
  std::ofstream(f.dir.file("model.safetensors.index.json")) << index.dump();
  CHECK_THAT(f.load_error(), Contains("'" + name + "'") && Contains("is not in this shard"));
}

TEST_CASE("a directory without config.json or without weights is refused", "[model_dir]") {
  checkpoint_fixture f;
  f.write();
  SECTION("no config.json") {
    fs::remove(f.dir.file("config.json"));
    CHECK_THAT(f.load_error(), Contains("no config.json") && Contains(f.dir.str()));
  }
  SECTION("no weights") {
    fs::remove(f.dir.file("model.safetensors.index.json"));
    CHECK_THAT(f.load_error(), Contains("no model.safetensors"));
  }
}

TEST_CASE("bad JSON is named with its file", "[model_dir]") {
  checkpoint_fixture f;
  f.write();
  SECTION("config.json") {
    std::ofstream(f.dir.file("config.json")) << "{ \"model_type\": ";
    CHECK_THAT(f.load_error(), Contains(f.dir.file("config.json")) && Contains("not valid JSON"));
  }
  SECTION("the index") {
    std::ofstream(f.dir.file("model.safetensors.index.json")) << "[1, 2";
    CHECK_THAT(f.load_error(), Contains("model.safetensors.index.json") && Contains("not valid JSON"));
  }
  SECTION("tokenizer.json") {
    std::ofstream(f.dir.file("tokenizer.json")) << "{";
    CHECK_THAT(f.load_error(), Contains("tokenizer.json") && Contains("not valid JSON"));
  }
}

TEST_CASE("load_model refuses a path that is neither a directory nor a GGUF file", "[model_dir]") {
  temp_dir dir("model-load");
  auto load_error = [](const std::string& path) {
    try {
      (void)load_model(path);
    } catch (const model_load_error& e) {
      return std::string(e.what());
    }
    FAIL("loaded " << path);
    return std::string();
  };
  const std::string text = dir.file("weights.bin");
  std::ofstream(text) << "not a model";
  CHECK_THAT(load_error(text), Contains(text) && Contains("neither"));
  const std::string missing = dir.file("nothing-here");
  CHECK_THAT(load_error(missing), Contains(missing) && Contains("no such file"));
  // A file with GGUF's magic goes to the GGUF loader: a truncated one is its error, naming it.
  const std::string gguf = dir.file("model.gguf");
  std::ofstream(gguf) << "GGUF\3\0\0\0";
  CHECK(is_gguf_file(gguf));
  CHECK_FALSE(is_gguf_file(text));
  CHECK_THAT(load_error(gguf), Contains(gguf));
}
