#pragma once
// Runs tools/npm/llamacpp_run.mjs (llama.cpp through node-llama-cpp 3.21.1, CPU) from a test.
#include <string>
#include <vector>

#include "runtime/core/token.hpp"
#include "runtime/model/model_config.hpp"

namespace anchorage::testing {

// Why llama.cpp cannot be run here ("node not found", "node-llama-cpp is not installed at ..."),
// or "" when it can.
std::string llamacpp_missing();

struct llamacpp_result {
  std::string error;                     // the harness's error (or its exit status); "" on success
  int n_vocab = 0;                       // size of the last position's distribution
  std::vector<double> logprobs;          // last position, log-softmax (NaN for an id not returned)
  std::vector<double> logits_minus_max;  // last position, logits shifted so the largest is 0
  std::vector<token_id> tokens;          // greedy continuation
  std::vector<std::string> log;          // llama.cpp's log lines (model load included)
  std::string raw_output;                // the harness's stdout and stderr, for failure messages
};

// Evaluates `ids` as one prompt on `gguf` and takes n_predict greedy tokens. Files go in `work_dir`.
llamacpp_result run_llamacpp(const std::string& gguf, const std::vector<token_id>& ids, int n_predict,
                             const std::string& work_dir);

// Runs tests/support/qwen35_hf_reference.py (a double-precision Hugging Face-semantics forward) on a
// safetensors file of c's qwen35 weights: the last position's logits minus their maximum. Empty,
// with `error` set, when python3 fails.
std::vector<double> run_hf_reference(const std::string& weights, const model_config& c,
                                     const std::vector<token_id>& ids, const std::string& work_dir,
                                     std::string* error);

}  // namespace anchorage::testing
