#include "tests/support/llamacpp.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

namespace anchorage::testing {
namespace {

const std::string npm_dir = std::string(ANCHORAGE_SOURCE_DIR) + "/tools/npm";

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

std::string llamacpp_missing() {
  if (std::system("command -v node >/dev/null 2>&1") != 0) return "node not found on PATH";
  namespace fs = std::filesystem;
  const std::string pkg = npm_dir + "/node_modules/node-llama-cpp/package.json";
  if (!fs::exists(pkg)) return "node-llama-cpp is not installed at " + npm_dir + "/node_modules";
  if (!fs::exists(npm_dir + "/node_modules/@node-llama-cpp/linux-x64"))
    return "node-llama-cpp's prebuilt linux-x64 binaries are not installed";
  return "";
}

llamacpp_result run_llamacpp(const std::string& gguf, const std::vector<token_id>& ids, int n_predict,
                             const std::string& work_dir) {
  llamacpp_result r;
  const std::string ids_path = work_dir + "/llamacpp_ids.json", out_path = work_dir + "/llamacpp_out.json",
                    log_path = work_dir + "/llamacpp_stdout.txt";
  {
    std::ofstream f(ids_path);
    f << nlohmann::json(ids).dump();
  }
  std::filesystem::remove(out_path);
  const std::string cmd = "node " + quote(npm_dir + "/llamacpp_run.mjs") + " --model " + quote(gguf) +
                          " --tokens " + quote(ids_path) + " --n-predict " + std::to_string(n_predict) +
                          " --out " + quote(out_path) + " >" + quote(log_path) + " 2>&1";
  const int status = std::system(cmd.c_str());
  r.raw_output = read_all(log_path);
  const std::string out = read_all(out_path);
  if (out.empty()) {
    r.error = "the harness wrote no output (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
    return r;
  }
  const nlohmann::json j = nlohmann::json::parse(out);
  if (j.contains("log"))
    for (const auto& l : j["log"]) r.log.push_back(l.get<std::string>());
  if (j.contains("error")) {
    r.error = j["error"].get<std::string>();
    return r;
  }
  r.n_vocab = j.at("n_vocab").get<int>();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& v : j.at("logprobs")) r.logprobs.push_back(v.is_null() ? nan : v.get<double>());
  for (const auto& v : j.at("logits_minus_max"))
    r.logits_minus_max.push_back(v.is_null() ? nan : v.get<double>());
  for (const auto& v : j.at("tokens")) r.tokens.push_back(v.get<token_id>());
  return r;
}

std::vector<double> run_hf_reference(const std::string& weights, const model_config& c,
                                     const std::vector<token_id>& ids, const std::string& work_dir,
                                     std::string* error) {
  const std::string cfg_path = work_dir + "/reference_config.json",
                    ids_path = work_dir + "/reference_ids.json", out_path = work_dir + "/reference_out.json";
  {
    std::ofstream f(cfg_path);
    f << nlohmann::json{{"d_model", c.d_model},
                        {"n_layers", c.n_layers},
                        {"vocab", c.vocab},
                        {"pattern", c.pattern},
                        {"gdn_hk", c.gdn_hk},
                        {"gdn_hv", c.gdn_hv},
                        {"gdn_dk", c.gdn_dk},
                        {"gdn_dv", c.gdn_dv},
                        {"conv_kernel", c.conv_kernel},
                        {"n_q", c.n_q},
                        {"n_kv", c.n_kv},
                        {"head_dim", c.head_dim},
                        {"rope_dims", c.rotary_dims()},
                        {"rope_base", c.rope_base},
                        {"norm_eps", c.norm_eps},
                        {"tied", c.tied_embeddings}}
             .dump();
    std::ofstream g(ids_path);
    g << nlohmann::json(ids).dump();
  }
  const std::string script = std::string(ANCHORAGE_SOURCE_DIR) + "/tests/support/qwen35_hf_reference.py";
  const std::string cmd = "python3 " + quote(script) + " " + quote(weights) + " " + quote(cfg_path) + " " +
                          quote(ids_path) + " >" + quote(out_path) + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = read_all(out_path);
  if (status != 0) {
    *error = "python3 exited with status " + std::to_string(WEXITSTATUS(status)) + ": " + out;
    return {};
  }
  return nlohmann::json::parse(out).get<std::vector<double>>();
}

}  // namespace anchorage::testing
