#pragma once
// A Hugging Face Qwen3.5 checkpoint directory (`--model DIR`), as `save_pretrained` writes it:
//
//   config.json                    the model (qwen35_config_from_json)
//   model.safetensors              the weights in one file, or
//   model.safetensors.index.json   {"weight_map": {tensor name: shard file name}} and its shards
//   tokenizer.json, tokenizer_config.json, chat_template.jinja   optional
#include <string>

#include "runtime/engine/loaded_model.hpp"

namespace anchorage {

// Reads the directory at `path`; config.preset is the directory's name. Tensor names are mapped to the
// text-only names of qwen35_weight_specs: "model.language_model." becomes "model.", "model.visual.*" is
// ignored, "mtp.*" is read only when the config asks for MTP (mtp_num_hidden_layers >= 1) and the checkpoint
// holds mtp.* tensors (without them it loads without MTP and logs so); a tied checkpoint's
// lm_head.weight, if present, is ignored. F32, F16 and BF16 are converted exactly to float, one
// tensor at a time, from memory-mapped shards whose pages are dropped once converted, so loading
// needs the float weights plus little more in memory. conv1d may be given as [C, 1, K] or [C, K].
//
// Throws model_load_error, whose message names the file and, where there is one, the tensor: no
// config.json, bad JSON, a config qwen35_config_from_json refuses, no weights file, a shard in
// the index that is missing, a malformed or truncated shard (a zero-byte one included), a tensor
// the index lists that its shard lacks, a missing tensor, a tensor whose shape differs (both
// shapes given) or whose dtype is not F32, F16 or BF16, a tensor present twice.
loaded_model load_model_dir(const std::string& path);

}  // namespace anchorage
