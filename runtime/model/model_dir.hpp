#pragma once
// A Hugging Face Qwen3.5 checkpoint directory (`--model DIR`), as `save_pretrained` writes it:
//
//   config.json                    the model (qwen35_config_from_json)
//   model.safetensors              the weights in one file, or
//   model.safetensors.index.json   {"weight_map": {tensor name: shard file name}} and its shards
//   tokenizer.json, tokenizer_config.json, chat_template.jinja   optional
//   preprocessor_config.json       optional, the image processor (read with the vision tower)
#include <string>

#include "runtime/model/loaded_model.hpp"

namespace anchorage {

// Reads the directory at `path`; config.preset is the directory's name. Tensor names are mapped to the
// text-only names of qwen35_weight_specs: "model.language_model." becomes "model.", "model.visual.*" and
// "visual.*" are the vision tower's (below), "mtp.*" is read only when the config asks for MTP
// (mtp_num_hidden_layers >= 1) and the checkpoint holds mtp.* tensors (without them it loads without MTP and
// logs so); a tied checkpoint's lm_head.weight, if present, is ignored. Matrices stored in BF16 or F16, the
// stacked routed experts of a mixture-of-experts model among them, are kept as stored (in the file's
// mapping); the other tensors are converted exactly to float, one tensor at a time, from memory-mapped shards
// whose pages are dropped once converted, so loading needs the float weights plus little more in memory.
// conv1d may be given as [C, 1, K] or [C, K].
//
// A mixture-of-experts block may store its routed experts one by one instead of fused (as the
// official checkpoints do in the MTP block): "{block}mlp.experts.{j}.gate_proj.weight" [I, H],
// ".up_proj.weight" [I, H] and ".down_proj.weight" [H, I] for every expert j; these are stacked
// into the fused mlp.experts.gate_up_proj [E, 2I, H] (expert j's gate rows, then its up rows) and
// mlp.experts.down_proj [E, H, I] as float32 (whatever their dtype), and the load's log line says
// how many were. The fused form wins where a checkpoint holds both.
//
// The vision tower (loaded_model::vision, loaded_vision.hpp) is read when config.json has a
// `vision_config` object and the weights hold model.visual.* (or visual.*, renamed model.visual.*)
// tensors: every one of them, whatever its name, converted to float32 (F32, F16 or BF16), with
// the vision_config object and preprocessor_config.json's text (empty when absent). Their shapes
// are runtime/vision's to check. Without a vision_config, or without vision tensors, `vision` is
// empty and the vision tensors are not opened; a vision-only shard the index lists that is not
// there leaves `vision` empty with a warning. The text model loads the same either way.
//
// Throws model_load_error, whose message names the file and, where there is one, the tensor: no
// config.json, bad JSON, a config qwen35_config_from_json refuses, no weights file, a shard in
// the index that is missing, a malformed or truncated shard (a zero-byte one included), a tensor
// the index lists that its shard lacks, a missing tensor (for experts stored one by one, the
// first missing one: every expert's gate and up, in expert order, before the down projections), a tensor
// whose shape differs (both shapes given) or whose dtype is not F32, F16 or BF16 (a vision tensor's
// dtype included), a tensor present twice (also as model.visual.x and visual.x).
loaded_model load_model_dir(const std::string& path);

}  // namespace anchorage
