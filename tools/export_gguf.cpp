// A qwen35-layout model as llama.cpp's qwen35 GGUF; prints JSON.
//   anchorage-export-gguf --preset NAME (--seed N | --weights FILE.safetensors) --out FILE.gguf
//                         [--dtype f32|f16] [--tokenizer tokenizer.json] [--chat-template FILE]
// --weights reads a file written by save_weights (anchorage-generate --save-weights) for that
// preset; --seed (default 1) makes random_weights. Without --tokenizer the byte vocabulary is written.
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "runtime/engine/model_config.hpp"
#include "runtime/engine/model_weights.hpp"
#include "runtime/engine/qwen35_gguf.hpp"

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
      else if (a == "--dtype")
        dtype_name = v;
      else if (a == "--tokenizer")
        tokenizer_path = v;
      else if (a == "--chat-template")
        template_path = v;
      else
        throw std::invalid_argument("unknown flag " + a);
    }
    if (preset.empty() || out.empty()) throw std::invalid_argument("--preset and --out are required");
    if (dtype_name != "f32" && dtype_name != "f16") throw std::invalid_argument("--dtype must be f32 or f16");
    const model_config c = preset_config(preset);
    const tensor_map w = weights.empty() ? random_weights(c, seed) : load_weights(weights, c);
    const nlohmann::json tok =
        tokenizer_path.empty() ? nlohmann::json() : nlohmann::json::parse(read_text(tokenizer_path));
    const std::string chat_template = template_path.empty() ? std::string() : read_text(template_path);
    save_qwen35_gguf(out, c, w, tok, chat_template, dtype_name == "f16" ? gguf_dtype::f16 : gguf_dtype::f32);
    nlohmann::json report = {{"out", out},
                             {"preset", preset},
                             {"dtype", dtype_name},
                             {"architecture", "qwen35"},
                             {"tensors", w.size()},
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
