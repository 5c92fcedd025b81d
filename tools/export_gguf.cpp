// A qwen35-layout model as llama.cpp's qwen35 GGUF (qwen35moe for a preset with experts, e.g.
// qwen35moe-tiny; the experts' gate and up written apart, as llama.cpp's converter does); prints JSON.
//   anchorage-export-gguf --preset NAME (--seed N | --weights FILE.safetensors) --out FILE.gguf
//                         [--type f32|f16|bf16|q8_0|q4_0|q4_k|q5_k|q6_k|q4_k_m|q5_k_m]
//                         [--tokenizer tokenizer.json] [--chat-template FILE]
// --weights reads a file written by save_weights (anchorage-generate --save-weights) for that
// preset; --seed (default 1) makes random_weights. Without --tokenizer the byte vocabulary is written.
// --type (default f32; --dtype is the same flag) picks what the weight matrices are stored as:
// the float types as llama.cpp's converter writes them, the block types as `llama-quantize --pure`
// does, q4_k_m/q5_k_m as llama-quantize's Q4_K_M/Q5_K_M mix; norms, 1-D tensors and ssm_conv1d stay
// F32, and so does a MoE model's router (gguf_dtype in runtime/model/qwen35_gguf.hpp has the rules
// and the fallbacks). The report names the architecture and counts the tensors written in each type.
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "runtime/model/gguf_file.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/qwen35_gguf.hpp"

using namespace anchorage;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string preset, weights, out, tokenizer_path, template_path, dtype_name = "f32";
  std::uint64_t seed = 1;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      const std::string v = argv[++i];
      if (a == "--preset")
        preset = v;
      else if (a == "--seed")
        seed = std::stoull(v);
      else if (a == "--weights")
        weights = v;
      else if (a == "--out")
        out = v;
      else if (a == "--type" || a == "--dtype")
        dtype_name = v;
      else if (a == "--tokenizer")
        tokenizer_path = v;
      else if (a == "--chat-template")
        template_path = v;
      else
        throw std::invalid_argument("unknown flag " + a);
    }
    if (preset.empty() || out.empty()) throw std::invalid_argument("--preset and --out are required");
    const gguf_dtype dtype = gguf_dtype_from_string(dtype_name);
    const model_config c = preset_config(preset);
    const tensor_map w = weights.empty() ? random_weights(c, seed) : load_weights(weights, c);
    const nlohmann::json tok =
        tokenizer_path.empty() ? nlohmann::json() : nlohmann::json::parse(read_text(tokenizer_path));
    const std::string chat_template = template_path.empty() ? std::string() : read_text(template_path);
    save_qwen35_gguf(out, c, w, tok, chat_template, dtype);
    nlohmann::json types = nlohmann::json::object();
    const gguf_reader written(out);
    for (const auto& t : written.tensors()) {
      const std::string n = ggml_type_name(t.type);
      types[n] = types.value(n, 0) + 1;
    }
    nlohmann::json report = {{"out", out},
                             {"preset", preset},
                             {"type", dtype_name},
                             {"file_type", llama_file_type(dtype)},
                             {"tensor_types", types},
                             {"architecture", qwen35_gguf_architecture(c)},
                             {"tensors", written.tensors().size()},
                             {"vocab", c.vocab},
                             {"tokenizer", tokenizer_path.empty() ? "bytes" : tokenizer_path}};
    if (weights.empty())
      report["seed"] = seed;
    else
      report["weights"] = weights;
    std::cout << report.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cout << nlohmann::json{{"error", e.what()}}.dump() << "\n";
    return 1;
  }
}
