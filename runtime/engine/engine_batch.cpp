// decode_batch: the decode step of engine_forward.cpp over B slots at once. Row b of every
// activation buffer is slot b's token; the dense ops take all B rows in one call, the ops that
// read or write a slot's state take its row alone, exactly as decode() would with m = 1.
#include "runtime/engine/engine_batch.hpp"

#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>

#include "runtime/engine/engine_impl.hpp"

namespace anchorage {

class engine_batch {
 public:
  engine_batch(const std::vector<engine*>& slots, const std::vector<token_id>& tokens) : tokens_(tokens) {
    for (engine* e : slots) s_.push_back(e->p_.get());
    lead_ = s_.front();
    n_ = static_cast<int>(s_.size());
  }

  static void check(const std::vector<engine*>& slots, const std::vector<token_id>& tokens);
  static void solo(const std::vector<engine*>& slots, const std::vector<token_id>& tokens) {
    for (std::size_t b = 0; b < slots.size(); ++b) slots[b]->decode(tokens[b]);
  }

  void run();

 private:
  using impl = engine::impl;
  const model_config& cfg() const { return lead_->cfg; }
  const kernels::ops& k() const { return lead_->k; }
  const float* weight(const std::string& name) const { return lead_->weight(name); }
  int pos(int b) const { return static_cast<int>(s_[static_cast<std::size_t>(b)]->state->valid_length()); }
  impl& slot(int b) const { return *s_[static_cast<std::size_t>(b)]; }

  // C[n_ x n] = A W^T + beta C over the batch: the solo decode's GEMV for a batch of one (so that
  // it is decode() bit for bit), else gemm_rows, which reads W once for every slot.
  void dense(int n, int kdim, const float* a, int lda, const float* w, int ldw, float beta, float* c,
             int ldc) const {
    if (n_ == 1)
      k().gemm(true, 1, n, kdim, 1.0f, a, lda, w, ldw, beta, c, ldc);
    else
      k().gemm_rows(n_, n, kdim, a, lda, w, ldw, beta, c, ldc);
  }
  void gdn_layer(int layer, int lg);
  void attention_block(const std::string& p, float* xs, int la, bool draft);
  void mlp_block(const std::string& p, float* xs);
  void mtp_layer();
  void head(const float* rows, const std::string& norm, bool draft);

  std::vector<impl*> s_;
  const std::vector<token_id>& tokens_;
  impl* lead_ = nullptr;  // its activation buffers carry the batch
  int n_ = 0;
};

void engine_batch::check(const std::vector<engine*>& slots, const std::vector<token_id>& tokens) {
  if (slots.empty()) throw std::invalid_argument("decode_batch: no slots");
  if (tokens.size() != slots.size())
    throw std::invalid_argument("decode_batch: " + std::to_string(tokens.size()) + " tokens for " +
                                std::to_string(slots.size()) + " slots");
  std::set<const engine*> seen;
  for (const engine* e : slots) {
    if (e == nullptr) throw std::invalid_argument("decode_batch: a null slot");
    if (!seen.insert(e).second) throw std::invalid_argument("decode_batch: the same engine twice");
  }
  const auto& shared = slots.front()->weights();
  const model_config& c = shared->config();
  if (slots.size() > static_cast<std::size_t>(c.grid))
    throw std::invalid_argument("decode_batch: " + std::to_string(slots.size()) +
                                " slots, more than the grid (" + std::to_string(c.grid) + " rows)");
  for (std::size_t b = 0; b < slots.size(); ++b) {
    const engine& e = *slots[b];
    const std::string which = "decode_batch: slot " + std::to_string(b);
    if (e.weights() != shared) throw std::invalid_argument(which + " does not share slot 0's weights");
    if (e.prefill_remaining() > 0) throw std::invalid_argument(which + " has a queued prefill");
    if (tokens[b] < 0 || tokens[b] >= c.vocab)
      throw std::invalid_argument(which + ": token id " + std::to_string(tokens[b]) +
                                  " is outside the vocabulary [0, " + std::to_string(c.vocab) + ")");
    if (e.length() + 1 > static_cast<std::size_t>(c.ctx_size))
      throw std::invalid_argument(which + " is full (context size " + std::to_string(c.ctx_size) + ")");
  }
}

void engine_batch::run() {
  const int d = cfg().d_model;
  impl& L = *lead_;
  std::memcpy(L.ids.data(), tokens_.data(), sizeof(token_id) * static_cast<std::size_t>(n_));
  const auto* ids = reinterpret_cast<const std::int32_t*>(L.ids.data());
  k().embed(ids, weight("embed"), L.x.data(), n_, d);
  if (cfg().mtp) k().embed(ids, weight("embed"), L.emb.data(), n_, d);

  int lg = 0, la = 0;
  for (int i = 0; i < cfg().n_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    if (cfg().is_gdn(i))
      gdn_layer(i, lg++);
    else
      attention_block(p, L.x.data(), la++, false);
    mlp_block(p, L.x.data());
  }
  if (cfg().mtp) mtp_layer();
  head(L.x.data(), "final_norm", false);
  for (impl* e : s_) e->state->set_valid_length(e->state->valid_length() + 1);
}

void engine_batch::gdn_layer(int layer, int lg) {
  const model_config& c = cfg();
  const int d = c.d_model, ch = c.conv_channels(), hv = c.gdn_hv, hk = c.gdn_hk;
  const int dk = c.gdn_dk, dv = c.gdn_dv, m = n_;
  const std::string p = "layers." + std::to_string(layer) + ".";
  impl& L = *lead_;
  k().rmsnorm(L.x.data(), d, weight(p + "attn_norm"), L.xn.data(), d, m, d, c.norm_eps);
  dense(ch, d, L.xn.data(), d, weight(p + "gdn.qkv"), d, 0.0f, L.proj.data(), ch);
  dense(hv * dv, d, L.xn.data(), d, weight(p + "gdn.z"), d, 0.0f, L.z.data(), hv * dv);
  dense(hv, d, L.xn.data(), d, weight(p + "gdn.a"), d, 0.0f, L.gate_a.data(), hv);
  dense(hv, d, L.xn.data(), d, weight(p + "gdn.b"), d, 0.0f, L.gate_b.data(), hv);

  const long tail_floats = static_cast<long>(c.conv_kernel - 1) * ch;
  for (int b = 0; b < m; ++b)
    k().causal_conv1d(L.proj.data() + static_cast<long>(b) * ch, weight(p + "gdn.conv"),
                      slot(b).gdn_conv.data() + lg * tail_floats, L.qkv.data() + static_cast<long>(b) * ch, 1,
                      ch, c.conv_kernel);
  k().l2norm(L.qkv.data(), ch, m, hk, dk, 1e-6f);
  k().l2norm(L.qkv.data() + hk * dk, ch, m, hk, dk, 1e-6f);
  k().gdn_gates(L.gate_a.data(), L.gate_b.data(), weight(p + "gdn.a_log"), weight(p + "gdn.dt_bias"),
                L.g.data(), L.beta.data(), m, hv);

  const kernels::gdn_shape one{1, hk, hv, dk, dv, ch, 1.0f / std::sqrt(static_cast<float>(dk)), c.gdn_chunk};
  const long s_floats = static_cast<long>(hv) * dk * dv;
  for (int b = 0; b < m; ++b)
    k().gdn_step(L.qkv.data() + static_cast<long>(b) * ch, L.g.data() + b * hv, L.beta.data() + b * hv,
                 slot(b).gdn_s.data() + lg * s_floats, L.mix.data() + static_cast<long>(b) * hv * dv, one);
  k().gated_rmsnorm(L.mix.data(), L.z.data(), weight(p + "gdn.norm"), L.mix.data(), m, hv, dv, c.norm_eps);
  dense(d, hv * dv, L.mix.data(), hv * dv, weight(p + "gdn.out"), hv * dv, 1.0f, L.x.data(), d);
}

// `draft`: the draft layer's own K/V rows (mtp.K, mtp.V); else attention layer `la` of K, V.
void engine_batch::attention_block(const std::string& p, float* xs, int la, bool draft) {
  const model_config& c = cfg();
  const int d = c.d_model, hd = c.head_dim, nq = c.n_q, nkv = c.n_kv, m = n_, row = c.kv_row();
  impl& L = *lead_;
  L.batch_k.grow_to(static_cast<std::size_t>(m) * row);
  L.batch_v.grow_to(static_cast<std::size_t>(m) * row);
  float* bk = L.batch_k.data();
  float* bv = L.batch_v.data();
  k().rmsnorm(xs, d, weight(p + "attn_norm"), L.xn.data(), d, m, d, c.norm_eps);
  if (c.layout == model_layout::qwen35) {
    dense(2 * nq * hd, d, L.xn.data(), d, weight(p + "attn.q"), d, 0.0f, L.proj.data(), 2 * nq * hd);
    k().rmsnorm(L.proj.data(), 2 * hd, weight(p + "attn.q_norm"), L.attn_q.data(), hd, m * nq, hd,
                c.norm_eps);
    dense(nkv * hd, d, L.xn.data(), d, weight(p + "attn.k"), d, 0.0f, L.attn_k.data(), row);
    for (int h = 0; h < nkv; ++h)
      k().rmsnorm(L.attn_k.data() + h * hd, row, weight(p + "attn.k_norm"), bk + h * hd, row, m, hd,
                  c.norm_eps);
  } else {
    dense(nq * hd, d, L.xn.data(), d, weight(p + "attn.q"), d, 0.0f, L.attn_q.data(), nq * hd);
    dense(row, d, L.xn.data(), d, weight(p + "attn.k"), d, 0.0f, bk, row);
  }
  dense(row, d, L.xn.data(), d, weight(p + "attn.v"), d, 0.0f, bv, row);

  const int rot = c.rotary_dims();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int b = 0; b < m; ++b) {
    impl& e = slot(b);
    const int at = pos(b);
    float* q = L.attn_q.data() + static_cast<long>(b) * nq * hd;
    float* kb = bk + static_cast<long>(b) * row;
    k().rope(q, nq * hd, 1, nq, hd, rot, at, c.rope_base);
    k().rope(kb, row, 1, nkv, hd, rot, at, c.rope_base);
    // The slot's K/V of this layer from row 0, and where this token's row goes.
    const int stride = draft ? row : c.count_attention() * row;
    float* k0 = draft ? e.mtp_k.data() : e.kv_k.data() + static_cast<long>(la) * row;
    float* v0 = draft ? e.mtp_v.data() : e.kv_v.data() + static_cast<long>(la) * row;
    const long off = static_cast<long>(at) * stride;
    std::memcpy(k0 + off, kb, sizeof(float) * static_cast<std::size_t>(row));
    std::memcpy(v0 + off, bv + static_cast<long>(b) * row, sizeof(float) * static_cast<std::size_t>(row));
    const kernels::attention_shape sh{1, at, nq, nkv, hd, nq * hd, stride, nq * hd, scale};
    L.attn_scratch.grow_to(static_cast<std::size_t>(kernels::attention_scratch(sh)));
    k().attention(q, k0, v0, L.attn_o.data() + static_cast<long>(b) * nq * hd, sh, L.attn_scratch.data());
  }
  if (c.layout == model_layout::qwen35)
    k().sigmoid_gate(L.attn_o.data(), hd, L.proj.data() + hd, 2 * hd, m * nq, hd);
  dense(d, nq * hd, L.attn_o.data(), nq * hd, weight(p + "attn.o"), nq * hd, 1.0f, xs, d);
}

void engine_batch::mlp_block(const std::string& p, float* xs) {
  const model_config& c = cfg();
  const int d = c.d_model, h = c.mlp_hidden, m = n_;
  impl& L = *lead_;
  k().rmsnorm(xs, d, weight(p + "mlp_norm"), L.xn.data(), d, m, d, c.norm_eps);
  dense(2 * h, d, L.xn.data(), d, weight(p + "mlp.gate_up"), d, 0.0f, L.proj.data(), 2 * h);
  k().swiglu(L.proj.data(), L.mix.data(), m, h);
  dense(d, h, L.mix.data(), h, weight(p + "mlp.down"), h, 1.0f, xs, d);
}

// engine_forward.cpp's mtp_layer with m = 1 per slot: row b of the draft layer's input is
// [slot b's mtp.h_last | its token's embedding] (in the layout's order).
void engine_batch::mtp_layer() {
  const model_config& c = cfg();
  const int d = c.d_model, m = n_;
  const bool qwen = c.layout == model_layout::qwen35;
  impl& L = *lead_;
  const float* hidden = L.x.data();
  if (qwen) {
    k().rmsnorm(L.x.data(), d, weight("final_norm"), L.hn.data(), d, m, d, c.norm_eps);
    hidden = L.hn.data();
  }
  float* cat_h = L.cat.data() + (qwen ? d : 0);
  float* cat_e = L.cat.data() + (qwen ? 0 : d);
  for (int b = 0; b < m; ++b)
    k().rmsnorm(slot(b).mtp_h.data(), d, weight("mtp.norm_h"), cat_h + static_cast<long>(b) * 2 * d, 2 * d, 1,
                d, c.norm_eps);
  k().rmsnorm(L.emb.data(), d, weight("mtp.norm_e"), cat_e, 2 * d, m, d, c.norm_eps);
  dense(d, 2 * d, L.cat.data(), 2 * d, weight("mtp.in"), 2 * d, 0.0f, L.xm.data(), d);
  kernels::device_sync(L.where);
  for (int b = 0; b < m; ++b)
    std::memcpy(slot(b).mtp_h.data(), hidden + static_cast<long>(b) * d,
                sizeof(float) * static_cast<std::size_t>(d));

  attention_block("mtp.", L.xm.data(), 0, true);
  mlp_block("mtp.", L.xm.data());
  head(L.xm.data(), "mtp.final_norm", true);
}

void engine_batch::head(const float* rows, const std::string& norm, bool draft) {
  const model_config& c = cfg();
  const int d = c.d_model, m = n_;
  const std::size_t vocab = static_cast<std::size_t>(c.vocab);
  impl& L = *lead_;
  L.batch_logits.grow_to(static_cast<std::size_t>(m) * vocab);
  k().rmsnorm(rows, d, weight(norm), L.xn.data(), d, m, d, c.norm_eps);
  dense(c.vocab, d, L.xn.data(), d, weight("lm_head"), d, 0.0f, L.batch_logits.data(), c.vocab);
  kernels::device_sync(L.where);
  for (int b = 0; b < m; ++b) {
    const float* out = L.batch_logits.data() + static_cast<std::size_t>(b) * vocab;
    (draft ? slot(b).draft_logits : slot(b).logits).assign(out, out + vocab);
  }
}

void decode_batch(const std::vector<engine*>& slots, const std::vector<token_id>& tokens) {
  engine_batch::check(slots, tokens);
  if (slots.front()->where() != kernels::backend::cpu) {
    engine_batch::solo(slots, tokens);
    return;
  }
  engine_batch(slots, tokens).run();
}

}  // namespace anchorage
