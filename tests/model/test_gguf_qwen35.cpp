// Tests for runtime/model/qwen35_gguf: export -> import gives back the config and the weights, the
// llama.cpp conventions are applied (checked against values computed here from the HF tensors),
// the tokenizer metadata and its tokenizer.json document, and the errors of load_qwen35_gguf.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/model/gguf_file.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/qwen35_gguf.hpp"
#include "runtime/model/qwen35_names.hpp"
#include "tests/model/model_checks.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using anchorage::testing::as_f32;
using namespace anchorage;
using anchorage::testing::check_gguf_weights;
using anchorage::testing::check_same_gguf_config;
using anchorage::testing::temp_dir;

TEST_CASE("gguf qwen35: export then import gives back the config and the weights", "[gguf]") {
  temp_dir d("gguf-qwen35");
  for (const char* preset : {"qwen35-tiny", "qwen35-tiny-mtp"}) {
    for (gguf_dtype dtype : {gguf_dtype::f32, gguf_dtype::f16}) {
      INFO(preset << (dtype == gguf_dtype::f16 ? " f16" : " f32"));
      const model_config c = preset_config(preset);
      REQUIRE(c.gdn_hv > c.gdn_hk);  // the V-head reorder is exercised
      const tensor_map w = random_weights(c, 7);
      const std::string path = d.file(std::string(preset) + ".gguf");
      save_qwen35_gguf(path, c, w, nullptr, "{{ messages }}", dtype);
      const loaded_model m = load_qwen35_gguf(path);
      check_same_gguf_config(m.config, c);
      check_gguf_weights(as_f32(m), w, dtype == gguf_dtype::f16);
      CHECK(m.chat_template == "{{ messages }}");
      CHECK(m.source == path);
    }
  }
}

TEST_CASE("gguf qwen35: the tensors follow llama.cpp's conventions", "[gguf]") {
  temp_dir d("gguf-qwen35");
  const model_config c = preset_config("qwen35-tiny-mtp");
  const tensor_map w = random_weights(c, 3);
  save_qwen35_gguf(d.file("m.gguf"), c, w, nullptr, "", gguf_dtype::f32);
  gguf_reader r(d.file("m.gguf"));
  const int hk = c.gdn_hk, rr = c.gdn_hv / c.gdn_hk, dv = c.gdn_dv, kd = 2 * c.gdn_hk * c.gdn_dk;
  auto hf = [&](const std::string& n) -> const tensor& { return w.at(n); };
  // The GGUF position of HF value head k*R + r is r*Hk + k.
  auto tiled = [&](int hf_head) { return (hf_head % rr) * hk + hf_head / rr; };

  CHECK(r.find_tensor("token_embd.weight")->ne == std::vector<std::int64_t>{c.d_model, c.vocab});
  CHECK(r.read("token_embd.weight").data == hf("model.embed_tokens.weight").data);
  CHECK(r.read("output.weight").data == hf("lm_head.weight").data);
  const tensor on = r.read("output_norm.weight");
  for (std::size_t i = 0; i < on.data.size(); ++i)
    CHECK(on.data[i] == hf("model.norm.weight").data[i] + 1.0f);
  // The gated norm is not offset.
  CHECK(r.read("blk.0.ssm_norm.weight").data == hf("model.layers.0.linear_attn.norm.weight").data);
  const tensor qn = r.read("blk.3.attn_q_norm.weight");
  CHECK(qn.data[5] == hf("model.layers.3.self_attn.q_norm.weight").data[5] + 1.0f);
  CHECK(r.read("blk.3.attn_q.weight").data == hf("model.layers.3.self_attn.q_proj.weight").data);

  // ssm_a = -exp(A_log) and dt bias, both reordered.
  const tensor a = r.read("blk.1.ssm_a"), dt = r.read("blk.1.ssm_dt.bias");
  CHECK(r.find_tensor("blk.1.ssm_a")->ne == std::vector<std::int64_t>{c.gdn_hv});
  for (int h = 0; h < c.gdn_hv; ++h) {
    CHECK(a.data[static_cast<std::size_t>(tiled(h))] ==
          -std::exp(hf("model.layers.1.linear_attn.A_log").data[static_cast<std::size_t>(h)]));
    CHECK(dt.data[static_cast<std::size_t>(tiled(h))] ==
          hf("model.layers.1.linear_attn.dt_bias").data[static_cast<std::size_t>(h)]);
  }
  // in_proj_qkv: Q and K rows untouched, V rows by head; conv1d squeezed the same way.
  const tensor& qkv = hf("model.layers.0.linear_attn.in_proj_qkv.weight");
  const tensor gq = r.read("blk.0.attn_qkv.weight");
  const std::size_t D = static_cast<std::size_t>(c.d_model);
  for (std::size_t i = 0; i < static_cast<std::size_t>(kd) * D; ++i) REQUIRE(gq.data[i] == qkv.data[i]);
  const tensor& conv = hf("model.layers.0.linear_attn.conv1d.weight");
  const tensor gc = r.read("blk.0.ssm_conv1d.weight");
  CHECK(r.find_tensor("blk.0.ssm_conv1d.weight")->ne ==
        std::vector<std::int64_t>{c.conv_kernel, c.conv_channels()});
  const std::size_t K = static_cast<std::size_t>(c.conv_kernel);
  const tensor& outp = hf("model.layers.0.linear_attn.out_proj.weight");
  const tensor go = r.read("blk.0.ssm_out.weight");
  const std::size_t Vd = static_cast<std::size_t>(c.gdn_hv * dv);
  for (int h = 0; h < c.gdn_hv; ++h)
    for (int e = 0; e < dv; ++e) {
      const auto src = static_cast<std::size_t>(kd + h * dv + e),
                 dst = static_cast<std::size_t>(kd + tiled(h) * dv + e);
      for (std::size_t j = 0; j < D; ++j) REQUIRE(gq.data[dst * D + j] == qkv.data[src * D + j]);
      for (std::size_t j = 0; j < K; ++j) REQUIRE(gc.data[dst * K + j] == conv.data[src * K + j]);
      const auto col_src = static_cast<std::size_t>(h * dv + e),
                 col_dst = static_cast<std::size_t>(tiled(h) * dv + e);
      for (std::size_t i = 0; i < D; ++i) REQUIRE(go.data[i * Vd + col_dst] == outp.data[i * Vd + col_src]);
    }
  // The mtp layer is block n_layers.
  const std::string mtp = "blk." + std::to_string(c.n_layers) + ".";
  CHECK(r.read(mtp + "nextn.eh_proj.weight").data == hf("mtp.fc.weight").data);
  CHECK(r.read(mtp + "attn_k.weight").data == hf("mtp.layers.0.self_attn.k_proj.weight").data);
  CHECK(r.read(mtp + "nextn.shared_head_norm.weight").data[0] == hf("mtp.norm.weight").data[0] + 1.0f);
  CHECK(r.find("qwen35.block_count")->i == c.n_layers + 1);
  CHECK(r.find("qwen35.nextn_predict_layers")->i == 1);
  CHECK(r.find("qwen35.full_attention_interval")->i == 4);
  CHECK(r.find("qwen35.rope.dimension_count")->i == c.rope_dims);
  CHECK(r.find("qwen35.ssm.inner_size")->i == c.gdn_hv * c.gdn_dv);
}

TEST_CASE("gguf qwen35: the byte vocabulary and its tokenizer.json document", "[gguf]") {
  temp_dir d("gguf-qwen35");
  const model_config c = preset_config("qwen35-tiny");
  save_qwen35_gguf(d.file("m.gguf"), c, random_weights(c, 1), nullptr, "", gguf_dtype::f32);
  gguf_reader r(d.file("m.gguf"));
  CHECK(r.find("tokenizer.ggml.model")->s == "gpt2");
  CHECK(r.find("tokenizer.ggml.pre")->s == "qwen35");
  const auto& tokens = r.find("tokenizer.ggml.tokens")->strings;
  const auto& types = r.find("tokenizer.ggml.token_type")->ints;
  REQUIRE(tokens.size() == 272);
  CHECK(tokens['a'] == "a");
  CHECK(tokens[' '] == "\xc4\xa0");   // U+0120 'Ġ'
  CHECK(tokens['\n'] == "\xc4\x8a");  // U+010A 'Ċ'
  CHECK(tokens[0xad] == "\xc5\x83");  // the soft hyphen is the 68th unprintable byte: U+0143
  CHECK(tokens[257] == "<|im_end|>");
  CHECK(types[257] == 3);
  CHECK(tokens[270] == "[PAD270]");
  CHECK(types[270] == 5);
  CHECK(r.find("tokenizer.ggml.eos_token_id")->i == 257);
  CHECK(r.find("tokenizer.ggml.bos_token_id")->i == 261);
  CHECK(r.find("tokenizer.ggml.add_bos_token")->i == 0);

  const loaded_model m = load_qwen35_gguf(d.file("m.gguf"));
  REQUIRE(m.tokenizer.is_object());
  CHECK(m.tokenizer["model"]["type"] == "BPE");
  CHECK(m.tokenizer["model"]["vocab"].size() == 256);
  CHECK(m.tokenizer["model"]["vocab"]["\xc4\xa0"] == 32);
  CHECK(m.tokenizer["added_tokens"].size() == 10);
  CHECK(m.tokenizer["added_tokens"][1]["content"] == "<|im_end|>");
  CHECK(m.tokenizer["added_tokens"][1]["id"] == 257);
  CHECK(m.tokenizer["normalizer"]["type"] == "NFC");
  CHECK(m.tokenizer_config["eos_token"] == "<|im_end|>");
  CHECK(m.tokenizer_config["pad_token"] == "<|endoftext|>");
  CHECK(m.tokenizer_config["add_bos_token"] == false);
  CHECK(m.tokenizer["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>().find(
            "\\p{M}") != std::string::npos);
}

TEST_CASE("gguf qwen35: a tokenizer.json goes in and comes back", "[gguf]") {
  temp_dir d("gguf-qwen35");
  model_config c = preset_config("qwen35-tiny");
  c.vocab = 300;
  // A small Qwen3-style tokenizer: the 256 byte symbols, two merges, three added tokens.
  nlohmann::json tok = {
      {"model", {{"type", "BPE"}, {"vocab", nlohmann::json::object()}, {"merges", nlohmann::json::array()}}},
      {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+"}}}}}};
  const loaded_model bytes_only = [&] {
    save_qwen35_gguf(d.file("b.gguf"), preset_config("qwen35-tiny"),
                     random_weights(preset_config("qwen35-tiny"), 1), nullptr, "", gguf_dtype::f32);
    return load_qwen35_gguf(d.file("b.gguf"));
  }();
  for (const auto& [text, id] : bytes_only.tokenizer["model"]["vocab"].items())
    tok["model"]["vocab"][text] = id;
  tok["model"]["vocab"]["\xc4\xa0\xc4\xa0"] = 256;
  tok["model"]["vocab"]["ab"] = 257;
  tok["model"]["merges"] = nlohmann::json::array(
      {nlohmann::json::array({"\xc4\xa0", "\xc4\xa0"}), nlohmann::json::array({"a", "b"})});
  tok["added_tokens"] = {{{"id", 258}, {"content", "<|endoftext|>"}, {"special", true}},
                         {{"id", 259}, {"content", "<|im_end|>"}, {"special", true}},
                         {{"id", 260}, {"content", "<think>"}, {"special", false}}};
  save_qwen35_gguf(d.file("t.gguf"), c, random_weights(c, 1), tok, "", gguf_dtype::f32);
  gguf_reader r(d.file("t.gguf"));
  CHECK(r.find("tokenizer.ggml.pre")->s == "qwen2");  // no \p{M}: a Qwen2/Qwen3 tokenizer
  CHECK(r.find("tokenizer.ggml.merges")->strings == std::vector<std::string>{"\xc4\xa0 \xc4\xa0", "a b"});
  CHECK(r.find("tokenizer.ggml.token_type")->ints[258] == 3);
  CHECK(r.find("tokenizer.ggml.token_type")->ints[260] == 4);
  CHECK(r.find("tokenizer.ggml.tokens")->strings[299] == "[PAD299]");
  CHECK(r.find("tokenizer.ggml.eos_token_id")->i == 259);
  CHECK(r.find("tokenizer.ggml.padding_token_id")->i == 258);

  const loaded_model m = load_qwen35_gguf(d.file("t.gguf"));
  CHECK(m.tokenizer["model"]["vocab"] == tok["model"]["vocab"]);
  CHECK(m.tokenizer["model"]["merges"] == tok["model"]["merges"]);
  REQUIRE(m.tokenizer["added_tokens"].size() == 3);
  CHECK(m.tokenizer["added_tokens"][2]["content"] == "<think>");
  CHECK(m.tokenizer["added_tokens"][2]["special"] == false);

  tok["added_tokens"].push_back({{"id", 300}, {"content", "<x>"}, {"special", true}});
  CHECK_THROWS_WITH(save_qwen35_gguf(d.file("u.gguf"), c, random_weights(c, 1), tok, "", gguf_dtype::f32),
                    Catch::Contains("id 300"));
}

TEST_CASE("gguf qwen35: load errors name the file and the key or tensor", "[gguf]") {
  temp_dir d("gguf-qwen35");
  const tensor t{{4}, {1, 2, 3, 4}};
  save_gguf(d.file("llama.gguf"), {{"general.architecture", gguf_value::str("llama")}},
            {{"x", &t, ggml_type::f32}});
  CHECK_THROWS_WITH(load_qwen35_gguf(d.file("llama.gguf")),
                    Catch::Contains("llama.gguf") && Catch::Contains("'llama', expected 'qwen35'"));

  // A file whose metadata lacks one required key.
  const model_config c = preset_config("qwen35-tiny");
  save_qwen35_gguf(d.file("ok.gguf"), c, random_weights(c, 1), nullptr, "", gguf_dtype::f32);
  {
    gguf_reader r(d.file("ok.gguf"));
    std::vector<std::pair<std::string, gguf_value>> kv;
    for (const auto& [k, v] : r.metadata())
      if (k != "qwen35.ssm.group_count") kv.emplace_back(k, v);
    std::vector<tensor> ts;
    ts.reserve(r.tensors().size());
    std::vector<gguf_tensor_out> out;
    for (const auto& info : r.tensors())
      if (info.name != "blk.2.ssm_alpha.weight") ts.push_back(r.read(info.name));
    std::size_t k = 0;
    for (const auto& info : r.tensors())
      if (info.name != "blk.2.ssm_alpha.weight") out.push_back({info.name, &ts[k++], ggml_type::f32});
    save_gguf(d.file("nokey.gguf"), kv, out);
    kv.emplace_back("qwen35.ssm.group_count", *r.find("qwen35.ssm.group_count"));
    save_gguf(d.file("notensor.gguf"), kv, out);
  }
  CHECK_THROWS_WITH(load_qwen35_gguf(d.file("nokey.gguf")),
                    Catch::Contains("missing metadata 'qwen35.ssm.group_count'"));
  CHECK_THROWS_WITH(load_qwen35_gguf(d.file("notensor.gguf")),
                    Catch::Contains("missing tensor 'blk.2.ssm_alpha.weight'"));
  CHECK_THROWS_AS(load_qwen35_gguf(d.file("absent.gguf")), model_load_error);
}

TEST_CASE("gguf qwen35: --model's loader takes an exported GGUF file", "[gguf]") {
  temp_dir d("gguf-qwen35");
  const model_config c = preset_config("qwen35-tiny");
  const tensor_map w = random_weights(c, 7);
  const std::string path = d.file("tiny.gguf");
  save_qwen35_gguf(path, c, w, nullptr, "", gguf_dtype::f32);
  const loaded_model m = load_model(path);
  CHECK(m.config.layout == model_layout::qwen35);
  CHECK(m.config.pattern == c.pattern);
  CHECK(m.weights.size() + m.stored.size() == w.size());  // the matrices read in the file's mapping
  CHECK(m.stored.at("model.layers.0.mlp.up_proj.weight").type == kernels::weight_type::f32);
  CHECK(as_f32(m).at("model.layers.0.linear_attn.in_proj_qkv.weight").data ==
        w.at("model.layers.0.linear_attn.in_proj_qkv.weight").data);
}
