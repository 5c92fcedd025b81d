#pragma once
// A tiny Qwen3.5 checkpoint with a real (random) tiny vision tower, for the tests that load a
// tower (tests/model/test_vision_load*.cpp): the text model and tower they write, config.json's
// vision_config and preprocessor_config.json as Hugging Face writes them, a load's error message,
// and checks that two vision or processor configs read back the same.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/core/tensor.hpp"
#include "runtime/image/image_processor_config.hpp"
#include "runtime/model/loaded_model.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/vision/vision_config.hpp"
#include "runtime/vision/vision_weights.hpp"
#include "tests/support/checkpoint_writer.hpp"

namespace anchorage::testing {

inline const model_config& text_config() {
  static const model_config c = preset_config("qwen35-tiny");
  return c;
}

inline const tensor_map& text_weights() {
  static const tensor_map w = round_to(random_weights(text_config(), 5), safetensors_dtype::bf16);
  return w;
}

// The tiny vision preset (depth 2, hidden 64, the real patch geometry), writing into the text model.
inline vision_config tiny_tower() { return tiny_vision_config(text_config().d_model); }

// config.json's vision_config for `v`, as Hugging Face writes it (with keys the loader passes on).
inline nlohmann::json hf_vision_config(const vision_config& v) {
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
          {"deepstack_visual_indexes", nlohmann::json::array()}};
}

inline const std::string& hf_processor_text() {
  static const std::string text = nlohmann::json{
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
inline checkpoint_options with_tower(const tensor_map& vision) {
  checkpoint_options o;
  o.vision_weights = vision;
  o.vision_config = hf_vision_config(tiny_tower());
  o.preprocessor_config = hf_processor_text();
  return o;
}

inline const tensor_map& tower_weights() {
  static const tensor_map w = random_vision_weights(tiny_tower(), 9);
  return w;
}

// write_checkpoint, with the text rotary's mrope_section cut to the tiny model's 4 frequency pairs
// (the writer gives Qwen3.5's [11, 11, 10], which a config reader may check against them).
inline void write_tiny(const std::string& dir, const checkpoint_options& o) {
  write_checkpoint(dir, text_config(), text_weights(), o);
  if (!o.multimodal) return;
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  config["text_config"]["rope_parameters"]["mrope_section"] = {2, 1, 1};
  std::ofstream(dir + "/config.json") << config.dump(2);
}

// The message of the model_load_error that load() throws, or "(no error)".
template <class Load>
std::string model_load_error_of(Load load) {
  try {
    load();
  } catch (const model_load_error& e) {
    return e.what();
  }
  return "(no error)";
}

inline void check_same_vision_config(const vision_config& got, const vision_config& want) {
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

inline void check_same_processor(const image_processor_config& got, const image_processor_config& want) {
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

}  // namespace anchorage::testing
