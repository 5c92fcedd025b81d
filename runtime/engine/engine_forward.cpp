// The forward pass over a run of consecutive rows: the reference hybrid model, and the qwen35
// layout (docs/QWEN35.md) where it departs from it: gated attention with per-head q/k norms and
// partial rotary, and the draft layer's input order.
#include <cmath>
#include <cstring>

#include "runtime/engine/engine_impl.hpp"
#include "runtime/engine/engine_linear.hpp"

namespace anchorage {

void engine::impl::forward_rows(const token_id* tok, int m, bool chunked) {
  const int d = cfg.d_model;
  const int pos0 = static_cast<int>(state->valid_length());
  // ids lives in engine memory; the previous forward ended with a device_sync in head().
  std::memcpy(ids.data(), tok, sizeof(token_id) * static_cast<std::size_t>(m));
  // Image rows carry key ids, not vocabulary ids (begin_prefill checked each lies in an image):
  // they embed as id 0 and then take their image's rows.
  bool images = false;
  for (int r = 0; r < m; ++r) {
    if (tok[r] >= 0) continue;
    ids.data()[r] = 0;
    images = true;
  }
  embed_rows(k, reinterpret_cast<const std::int32_t*>(ids.data()), weights->linear("embed"), x.data(), m, d);
  if (cfg.mtp)
    embed_rows(k, reinterpret_cast<const std::int32_t*>(ids.data()), weights->linear("embed"), emb.data(), m,
               d);
  if (images) {
    kernels::device_sync(where);
    for (int r = 0; r < m; ++r) {
      if (tok[r] >= 0) continue;
      const std::size_t row = static_cast<std::size_t>(pos0 + r);
      const image_span* s = media.span_of(row);
      const float* src = s->embeddings->data() + (row - s->start) * static_cast<std::size_t>(d);
      std::memcpy(x.data() + static_cast<long>(r) * d, src, sizeof(float) * static_cast<std::size_t>(d));
      if (cfg.mtp)
        std::memcpy(emb.data() + static_cast<long>(r) * d, src, sizeof(float) * static_cast<std::size_t>(d));
    }
  }

  const int kv_stride = cfg.count_attention() * cfg.kv_row();
  int lg = 0, la = 0;
  for (int i = 0; i < cfg.n_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    if (cfg.is_gdn(i)) {
      gdn_layer(i, lg++, m, chunked);
    } else {
      const long off = static_cast<long>(pos0) * kv_stride + static_cast<long>(la++) * cfg.kv_row();
      attention_block(p, x.data(), kv_k.data() + off, kv_v.data() + off, kv_stride, m);
    }
    mlp_block(p, x.data(), m);
  }
  if (cfg.mtp) mtp_layer(m);
  head(x.data() + static_cast<long>(m - 1) * d, "final_norm", logits_dev.data(), logits);
}

void engine::impl::rope_rows(float* rows, int stride, int m, int heads, int pos0) {
  const int rot = cfg.rotary_dims();
  if (media.empty()) {
    k.rope(rows, stride, m, heads, cfg.head_dim, rot, pos0, cfg.rope_base);
    return;
  }
  const std::vector<int> pos = media.positions(static_cast<std::size_t>(pos0), static_cast<std::size_t>(m));
  k.rope_multi(rows, stride, m, heads, cfg.head_dim, rot, pos.data(), cfg.mrope_section.data(),
               cfg.rope_base);
}

void engine::impl::product(int m, int n, int kd, const float* in, int ldx, const std::string& name, float add,
                           float* out, int ldy) {
  linear(k, false, m, n, kd, in, ldx, weights->linear(name), add, out, ldy, scratch);
}

void engine::impl::gdn_layer(int layer, int lg, int m, bool chunked) {
  const int d = cfg.d_model, ch = cfg.conv_channels(), hv = cfg.gdn_hv, hk = cfg.gdn_hk;
  const int dk = cfg.gdn_dk, dv = cfg.gdn_dv;
  const std::string p = "layers." + std::to_string(layer) + ".";
  k.rmsnorm(x.data(), d, weight(p + "attn_norm"), xn.data(), d, m, d, cfg.norm_eps);
  product(m, ch, d, xn.data(), d, p + "gdn.qkv", 0.0f, proj.data(), ch);
  product(m, hv * dv, d, xn.data(), d, p + "gdn.z", 0.0f, z.data(), hv * dv);
  product(m, hv, d, xn.data(), d, p + "gdn.a", 0.0f, gate_a.data(), hv);
  product(m, hv, d, xn.data(), d, p + "gdn.b", 0.0f, gate_b.data(), hv);

  float* tail = gdn_conv.data() + static_cast<long>(lg) * (cfg.conv_kernel - 1) * ch;
  k.causal_conv1d(proj.data(), weight(p + "gdn.conv"), tail, qkv.data(), m, ch, cfg.conv_kernel);
  k.l2norm(qkv.data(), ch, m, hk, dk, 1e-6f);
  k.l2norm(qkv.data() + hk * dk, ch, m, hk, dk, 1e-6f);
  k.gdn_gates(gate_a.data(), gate_b.data(), weight(p + "gdn.a_log"), weight(p + "gdn.dt_bias"), g.data(),
              beta.data(), m, hv);

  float* s = gdn_s.data() + static_cast<long>(lg) * hv * dk * dv;
  const kernels::gdn_shape sh{m, hk, hv, dk, dv, ch, 1.0f / std::sqrt(static_cast<float>(dk)), cfg.gdn_chunk};
  if (chunked)
    k.gdn_chunk(qkv.data(), g.data(), beta.data(), s, mix.data(), sh, gdn_scratch.data());
  else
    k.gdn_step(qkv.data(), g.data(), beta.data(), s, mix.data(), sh);
  k.gated_rmsnorm(mix.data(), z.data(), weight(p + "gdn.norm"), mix.data(), m, hv, dv, cfg.norm_eps);
  // x += o W_out^T
  product(m, d, hv * dv, mix.data(), hv * dv, p + "gdn.out", 1.0f, x.data(), d);
}

void engine::impl::attention_block(const std::string& p, float* xs, float* k_rows, float* v_rows,
                                   int kv_stride, int m) {
  const int d = cfg.d_model, hd = cfg.head_dim, nq = cfg.n_q, nkv = cfg.n_kv;
  const int pos0 = static_cast<int>(state->valid_length());
  k.rmsnorm(xs, d, weight(p + "attn_norm"), xn.data(), d, m, d, cfg.norm_eps);
  if (cfg.layout == model_layout::qwen35) {
    // q_proj rows are [query | gate] per head: query head (t, h) sits at (t*nq + h) * 2hd, so one
    // rmsnorm over m*nq rows of stride 2hd normalises every query head into attn_q.
    product(m, 2 * nq * hd, d, xn.data(), d, p + "attn.q", 0.0f, proj.data(), 2 * nq * hd);
    k.rmsnorm(proj.data(), 2 * hd, weight(p + "attn.q_norm"), attn_q.data(), hd, m * nq, hd, cfg.norm_eps);
    product(m, nkv * hd, d, xn.data(), d, p + "attn.k", 0.0f, attn_k.data(), nkv * hd);
    for (int h = 0; h < nkv; ++h)
      k.rmsnorm(attn_k.data() + h * hd, nkv * hd, weight(p + "attn.k_norm"), k_rows + h * hd, kv_stride, m,
                hd, cfg.norm_eps);
  } else {
    product(m, nq * hd, d, xn.data(), d, p + "attn.q", 0.0f, attn_q.data(), nq * hd);
    product(m, nkv * hd, d, xn.data(), d, p + "attn.k", 0.0f, k_rows, kv_stride);
  }
  product(m, nkv * hd, d, xn.data(), d, p + "attn.v", 0.0f, v_rows, kv_stride);
  rope_rows(attn_q.data(), nq * hd, m, nq, pos0);
  rope_rows(k_rows, kv_stride, m, nkv, pos0);

  const kernels::attention_shape sh{
      m, pos0, nq, nkv, hd, nq * hd, kv_stride, nq * hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  // K and V of the layer start at row 0: step back from this chunk's rows.
  const long back = static_cast<long>(pos0) * kv_stride;
  attention_by_heads(k, attn_q.data(), k_rows - back, v_rows - back, attn_o.data(), sh, attn_scratch);
  if (cfg.layout == model_layout::qwen35)
    k.sigmoid_gate(attn_o.data(), hd, proj.data() + hd, 2 * hd, m * nq,
                   hd);  // gate head (t, h) after its query
  product(m, d, nq * hd, attn_o.data(), nq * hd, p + "attn.o", 1.0f, xs, d);
}

void engine::impl::mlp_block(const std::string& p, float* xs, int m) {
  const int d = cfg.d_model, h = cfg.mlp_hidden;
  k.rmsnorm(xs, d, weight(p + "mlp_norm"), xn.data(), d, m, d, cfg.norm_eps);
  if (cfg.is_moe()) {
    moe_block(k, false, *weights, p + "moe.", m, xn.data(), xs, moe, scratch);
    return;
  }
  product(m, 2 * h, d, xn.data(), d, p + "mlp.gate_up", 0.0f, proj.data(), 2 * h);
  k.swiglu(proj.data(), mix.data(), m, h);
  product(m, d, h, mix.data(), h, p + "mlp.down", 1.0f, xs, d);
}

// The draft layer reads, at row t, the model's hidden row of t - 1 (mtp.h_last for the chunk's
// first row) beside the embedding of token t; it keeps its own K/V rows. The reference layout
// takes the last layer's output and puts it first; the qwen35 layout takes it after the final
// norm (the hidden state vLLM and llama.cpp hand to the MTP layer) and puts the embedding first.
void engine::impl::mtp_layer(int m) {
  const int d = cfg.d_model;
  const int pos0 = static_cast<int>(state->valid_length());
  const bool qwen = cfg.layout == model_layout::qwen35;
  const float* hidden = x.data();
  if (qwen) {
    k.rmsnorm(x.data(), d, weight("final_norm"), hn.data(), d, m, d, cfg.norm_eps);
    hidden = hn.data();
  }
  float* cat_h = cat.data() + (qwen ? d : 0);
  float* cat_e = cat.data() + (qwen ? 0 : d);
  k.rmsnorm(mtp_h.data(), d, weight("mtp.norm_h"), cat_h, 2 * d, 1, d, cfg.norm_eps);
  if (m > 1) k.rmsnorm(hidden, d, weight("mtp.norm_h"), cat_h + 2 * d, 2 * d, m - 1, d, cfg.norm_eps);
  k.rmsnorm(emb.data(), d, weight("mtp.norm_e"), cat_e, 2 * d, m, d, cfg.norm_eps);
  product(m, d, 2 * d, cat.data(), 2 * d, "mtp.in", 0.0f, xm.data(), d);
  kernels::device_sync(where);
  std::memcpy(mtp_h.data(), hidden + static_cast<long>(m - 1) * d, sizeof(float) * d);

  const int kv_stride = cfg.kv_row();
  const long off = static_cast<long>(pos0) * kv_stride;
  attention_block("mtp.", xm.data(), mtp_k.data() + off, mtp_v.data() + off, kv_stride, m);
  mlp_block("mtp.", xm.data(), m);
  head(xm.data() + static_cast<long>(m - 1) * d, "mtp.final_norm", draft_dev.data(), draft_logits);
}

void engine::impl::head(const float* row, const std::string& norm, float* out_dev, std::vector<float>& out) {
  const int d = cfg.d_model;
  k.rmsnorm(row, d, weight(norm), xn.data(), d, 1, d, cfg.norm_eps);
  product(1, cfg.vocab, d, xn.data(), d, "lm_head", 0.0f, out_dev, cfg.vocab);
  kernels::device_sync(where);
  out.assign(out_dev, out_dev + cfg.vocab);
}

}  // namespace anchorage
