#pragma once
// Private to the engine: its buffers and the forward pass (runtime/engine/engine.cpp,
// runtime/engine/engine_forward.cpp, runtime/engine/engine_state.cpp).
#include <map>
#include <string>
#include <vector>

#include "kernels/ops.hpp"
#include "runtime/engine/device_buffer.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/engine/engine_linear.hpp"
#include "runtime/engine/engine_moe.hpp"
#include "runtime/engine/prompt_media.hpp"

namespace anchorage {

// The engine's state adapter: sections and views over the engine's buffers.
class engine_state final : public state_adapter {
 public:
  struct region {
    float* base;
    std::size_t bytes;  // section: whole size; view: bytes per token
  };

  engine_state(kernels::backend where, state_layout layout, std::vector<region> sections,
               std::vector<region> views);

  const state_layout& layout() const override { return layout_; }
  void copy_section_out(std::size_t section, void* dst) const override;
  void copy_section_in(std::size_t section, const void* src) override;
  void copy_rows_out(std::size_t view, std::size_t a, std::size_t b, void* dst) const override;
  void copy_rows_in(std::size_t view, std::size_t a, std::size_t b, const void* src) override;
  std::size_t valid_length() const override { return length_; }
  void set_valid_length(std::size_t n) override;
  // On the engine's backend, over its own buffers (no copy).
  void checksum_rows(std::size_t view, std::size_t a, std::size_t b, std::uint64_t out[2]) const override;
  void checksum_section(std::size_t section, std::uint64_t out[2]) const override;

  void zero_sections();
  void set_fingerprint(std::uint64_t f) { layout_.fingerprint = f; }

 private:
  void check_rows(std::size_t view, std::size_t a, std::size_t b) const;

  kernels::backend where_;
  state_layout layout_;
  std::vector<region> sections_;
  std::vector<region> views_;
  std::size_t length_ = 0;
};

struct engine::impl {
  explicit impl(std::shared_ptr<const engine_weights> w);

  // Runs rows [pos0, pos0 + ids.size()) through the model; chunked form when `chunked`.
  void forward_rows(const token_id* ids, int m, bool chunked);
  // Rotary on rows [pos0, pos0 + m) of `rows` (heads heads each, `stride` floats apart): plain
  // rope at the rows' text positions, or Qwen3.5's multimodal rope when the prompt has images.
  void rope_rows(float* rows, int stride, int m, int heads, int pos0);
  // The rotary position of text row `row` (row itself, less what earlier images skip).
  int text_position(std::size_t row) const { return media.position(row)[0]; }

  prompt_media media;  // the prompt's images (set_media); empty for text

  const float* weight(const std::string& name) const { return weights->get(name); }
  // out[m x n] = in[m x kd] W^T (+ out when `add` is 1) for the matrix `name` (engine_linear.hpp).
  void product(int m, int n, int kd, const float* in, int ldx, const std::string& name, float add, float* out,
               int ldy);

  std::shared_ptr<const engine_weights> weights;
  model_config cfg;
  kernels::backend where;
  const kernels::ops& k;

  // state
  device_buffer gdn_s, gdn_conv, kv_k, kv_v, mtp_k, mtp_v, mtp_h;
  std::unique_ptr<engine_state> state;

  // activations for up to `grid` rows
  device_buffer ids, x, xn, emb, proj, qkv, z, gate_a, gate_b, g, beta, mix, attn_q, attn_o;
  device_buffer cat, xm, gdn_scratch, attn_scratch, logits_dev, draft_dev;
  // qwen35: K before its per-head norm; the final-normed rows the draft layer reads
  device_buffer attn_k, hn;
  // decode_batch, when this engine leads a batch: K and V rows before they go to each slot,
  // the logits of every slot (grown on demand)
  device_buffer batch_k, batch_v, batch_logits;

  std::vector<float> logits, draft_logits;
  linear_scratch scratch;  // the products by weights kept as stored
  moe_scratch moe;         // the mixture-of-experts blocks' buffers
  // The last forward_batch's rows of this engine, and what keep_rows() needs to cut them back
  // (engine_batch.cpp, engine_verify.cpp): with more than one row (`saved`), the recurrent state,
  // convolution tails and mtp.h_last before the round and each row's inputs to the convolution
  // and the delta rule, [gdn layer][row][...]; the hidden row the draft layer reads after each row.
  struct round_record {
    std::size_t start = 0, rows = 0;
    bool saved = false;
    std::vector<float> s, conv, mtp_h;
    std::vector<float> proj, qkv, g, beta;
    std::vector<float> hidden;
    std::vector<float> logits, draft_logits;  // [row][vocab]
  } round;
  std::vector<token_id> queued;  // begin_prefill's tokens not yet run
  std::size_t queued_at = 0;

 private:
  void gdn_layer(int layer, int lg, int m, bool chunked);
  void attention_block(const std::string& prefix, float* xs, float* k_rows, float* v_rows, int kv_stride,
                       int m);
  void mlp_block(const std::string& prefix, float* xs, int m);
  void mtp_layer(int m);
  void head(const float* row, const std::string& norm, float* out_dev, std::vector<float>& out);
};

// The draft layer alone on `e` (engine_batch.cpp's draft_step): [h | next's embedding] at `pos`.
void engine_draft_step(engine& e, token_id next, const float* h, int pos, std::vector<float>& logits,
                       float* h_out);

}  // namespace anchorage
