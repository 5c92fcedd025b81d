#pragma once
// llama.cpp's vision file for Qwen3-VL and Qwen3.5 (an "mmproj" GGUF, `--mmproj FILE.gguf`), read
// into the Hugging Face form the vision layer builds its encoder from (loaded_vision.hpp).
//
// llama.cpp writes it with convert_hf_to_gguf.py --mmproj (conversion/qwen3vl.py
// Qwen3VLVisionModel, registered for Qwen3_5ForConditionalGeneration and the MoE model) and reads
// it in tools/mtmd/clip.cpp (key and tensor names in clip-impl.h). ../shared/reference/
// model-formats.md section 3.5 has the table.
//
// Metadata read (general.architecture "clip"):
//   clip.has_vision_encoder            true
//   clip.vision.projector_type, else clip.projector_type   "qwen3vl_merger" (PROJECTOR_TYPE_QWEN3VL)
//   clip.use_gelu                      true (the blocks' tanh GELU; clip.use_silu is refused)
//   clip.vision.block_count            -> depth
//   clip.vision.embedding_length       -> hidden_size
//   clip.vision.attention.head_count   -> num_heads
//   clip.vision.feed_forward_length    -> intermediate_size
//   clip.vision.projection_dim         -> out_hidden_size (the language model's hidden size)
//   clip.vision.patch_size             -> patch_size
//   clip.vision.image_size             -> num_position_embeddings = (image_size / patch_size)^2
//   clip.vision.spatial_merge_size     -> spatial_merge_size (2 when absent, as clip.cpp)
//   clip.vision.image_mean / image_std            -> the processor's image_mean / image_std
//   clip.vision.image_min_pixels / image_max_pixels (optional) -> its min_pixels / max_pixels
//   clip.vision.is_deepstack_layers    (optional) must hold no true: DeepStack is Qwen3-VL's
// Tensors (GGUF -> Hugging Face under "model.visual."; shapes in PyTorch order, h = hidden, m = h *
// merge^2, f = intermediate, p = patch):
//   v.patch_embd.weight [h, 3, p, p] (t = 0) and v.patch_embd.weight.1 (t = 1)
//                           -> patch_embed.proj.weight [h, 3, 2, p, p], the two stacked along T
//   v.patch_embd.bias       -> patch_embed.proj.bias
//   v.position_embd.weight  -> pos_embed.weight [num_position_embeddings, h]
//   v.blk.N.attn_qkv, attn_out, ln1, ln2, ffn_up, ffn_down (.weight, .bias)
//                           -> blocks.N.attn.qkv, attn.proj, norm1, norm2, mlp.linear_fc1, mlp.linear_fc2
//   v.post_ln               -> merger.norm
//   mm.0, mm.2              -> merger.linear_fc1 [m, m], merger.linear_fc2 [out_hidden, m]
// The vision_config built has those keys plus in_channels 3, temporal_patch_size 2 and hidden_act
// "gelu_pytorch_tanh" (Qwen3.5's; llama.cpp's GELU is the tanh form too). rope_theta is not in
// the file: the vision layer's default (10000, what clip.cpp uses) applies. The processor config is
// {"image_mean", "image_std", "patch_size", "merge_size", "temporal_patch_size": 2, and
// "min_pixels" / "max_pixels" when the file has them}, in the keys preprocessor_config.json uses.
#include <string>

#include "runtime/model/loaded_model.hpp"
#include "runtime/model/loaded_vision.hpp"

namespace anchorage {

// Reads the mmproj file at `path`. Each tensor may be stored as F32, F16, BF16, Q8_0, Q4_0, Q4_K,
// Q5_K or Q6_K (gguf_reader::read converts it to float32); a shape may differ from the expected
// one by leading 1s. Every tensor's presence, shape and type is checked before any is read.
// Throws model_load_error naming the file and the key or tensor: not a GGUF file or a malformed
// one, general.architecture other than "clip", no vision encoder, another projector type (named),
// a missing or mistyped key, an image_size that patch_size does not divide, a missing or
// mis-shaped tensor (both shapes given), a tensor type Anchorage does not read, DeepStack layers,
// and any v.* or mm.* tensor it does not know (a tower it would run wrong otherwise).
loaded_vision load_mmproj(const std::string& path);

}  // namespace anchorage
