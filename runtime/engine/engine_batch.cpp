// forward_batch: the decode step over rows of (slot, position). Row r of every activation buffer
// is one token of one slot; a slot's rows are consecutive and in position order. The dense ops
// take all rows in one call; the ops that read or write a slot's state take one row at a time,
// in order, exactly as decode() does with its single row.
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
  using impl = engine::impl;

  engine_batch(const std::vector<engine*>& slots, const std::vector<std::vector<token_id>>& rows) {
    for (std::size_t b = 0; b < slots.size(); ++b) {
      impl* e = slots[b]->p_.get();
      s_.push_back(e);
      const int at = static_cast<int>(e->state->valid_length());
      for (std::size_t i = 0; i < rows[b].size(); ++i) {
        tokens_.push_back(rows[b][i]);
        rows_.push_back({static_cast<int>(b), at + static_cast<int>(i), static_cast<int>(i)});
      }
    }
    lead_ = s_.front();
    n_ = static_cast<int>(rows_.size());
  }

  static void check(const std::vector<engine*>& slots, const std::vector<std::vector<token_id>>& rows);
  static void solo(const std::vector<engine*>& slots, const std::vector<std::vector<token_id>>& rows) {
    for (std::size_t b = 0; b < slots.size(); ++b) slots[b]->decode(rows[b].front());
  }

  void run();
  // The draft layer alone, for the one slot and its one row (engine::draft): [h | next's
  // embedding] through the draft layer at the row's position `pos`, writing the draft layer's
  // K/V row there (above the valid length: the verify round that forwards `next` writes the same
  // row again before any attention reads it). The draft logits go to `logits`, the row the next
  // draft reads as its hidden one to `h_out` (the layout's choice, as mtp_layer()).
  void draft_step(const float* h, int pos, std::vector<float>& logits, float* h_out);

 private:
  struct batch_row {
    int slot;
    int pos;    // the position it forwards
    int local;  // its index among its slot's rows
  };

  const model_config& cfg() const { return lead_->cfg; }
  const kernels::ops& k() const { return lead_->k; }
  const float* weight(const std::string& name) const { return lead_->weight(name); }
  impl& slot_of(int r) const {
    return *s_[static_cast<std::size_t>(rows_[static_cast<std::size_t>(r)].slot)];
  }
  const batch_row& at(int r) const { return rows_[static_cast<std::size_t>(r)]; }
  bool keeps(int r) const { return slot_of(r).round.saved; }

  // C[rows x n] = A W^T + beta C: gemm_rows, or the stored product, whose row sums do not depend
  // on the other rows.
  void dense(int n, int kdim, const float* a, int lda, const std::string& name, float beta, float* c,
             int ldc) const {
    linear(k(), true, n_, n, kdim, a, lda, lead_->weights->linear(name), beta, c, ldc, lead_->scratch);
  }
  void begin_round();
  void gdn_layer(int layer, int lg);
  void attention_block(const std::string& p, float* xs, int la, bool draft);
  void mlp_block(const std::string& p, float* xs);
  void mtp_layer();
  void head(const float* rows, const std::string& norm, bool draft);

  std::vector<impl*> s_;
  std::vector<token_id> tokens_;
  std::vector<batch_row> rows_;
  impl* lead_ = nullptr;  // its activation buffers carry the batch
  int n_ = 0;
};

void engine_batch::check(const std::vector<engine*>& slots, const std::vector<std::vector<token_id>>& rows) {
  if (slots.empty()) throw std::invalid_argument("forward_batch: no slots");
  if (rows.size() != slots.size())
    throw std::invalid_argument("forward_batch: " + std::to_string(rows.size()) + " row lists for " +
                                std::to_string(slots.size()) + " slots");
  std::set<const engine*> seen;
  for (const engine* e : slots) {
    if (e == nullptr) throw std::invalid_argument("forward_batch: a null slot");
    if (!seen.insert(e).second) throw std::invalid_argument("forward_batch: the same engine twice");
  }
  const auto& shared = slots.front()->weights();
  const model_config& c = shared->config();
  std::size_t total = 0;
  for (std::size_t b = 0; b < slots.size(); ++b) {
    const engine& e = *slots[b];
    const std::string which = "forward_batch: slot " + std::to_string(b);
    if (rows[b].empty()) throw std::invalid_argument(which + " has no row");
    if (e.weights() != shared) throw std::invalid_argument(which + " does not share slot 0's weights");
    if (e.prefill_remaining() > 0) throw std::invalid_argument(which + " has a queued prefill");
    for (token_id t : rows[b])
      if (t < 0 || t >= c.vocab)
        throw std::invalid_argument(which + ": token id " + std::to_string(t) +
                                    " is outside the vocabulary [0, " + std::to_string(c.vocab) + ")");
    if (e.length() + rows[b].size() > static_cast<std::size_t>(c.ctx_size))
      throw std::invalid_argument(which + " would pass the context size " + std::to_string(c.ctx_size));
    if (rows[b].size() > 1 && e.where() != kernels::backend::cpu)
      throw std::invalid_argument(which + ": verify rounds run on the cpu backend only");
    total += rows[b].size();
  }
  if (total > static_cast<std::size_t>(c.grid))
    throw std::invalid_argument("forward_batch: " + std::to_string(total) + " rows, more than the grid (" +
                                std::to_string(c.grid) + " rows)");
}

// Each slot's record of this round (engine_impl.hpp's round_record): a slot of several rows keeps
// its recurrent state as it was, for keep_rows().
void engine_batch::begin_round() {
  const model_config& c = cfg();
  const std::size_t vocab = static_cast<std::size_t>(c.vocab);
  std::vector<std::size_t> count(s_.size(), 0);
  for (const batch_row& r : rows_) ++count[static_cast<std::size_t>(r.slot)];
  for (std::size_t b = 0; b < s_.size(); ++b) {
    impl::round_record& rec = s_[b]->round;
    rec.start = s_[b]->state->valid_length();
    rec.rows = count[b];
    rec.saved = count[b] > 1;
    rec.logits.resize(count[b] * vocab);
    rec.draft_logits.resize(c.mtp ? count[b] * vocab : 0);
    if (!rec.saved) continue;
    impl& e = *s_[b];
    const std::size_t ch = static_cast<std::size_t>(c.conv_channels()),
                      hv = static_cast<std::size_t>(c.gdn_hv);
    const std::size_t ng = static_cast<std::size_t>(c.count_gdn()), n = count[b];
    rec.s.assign(e.gdn_s.data(), e.gdn_s.data() + e.gdn_s.size());
    rec.conv.assign(e.gdn_conv.data(), e.gdn_conv.data() + e.gdn_conv.size());
    rec.proj.resize(ng * n * ch);
    rec.qkv.resize(ng * n * ch);
    rec.g.resize(ng * n * hv);
    rec.beta.resize(ng * n * hv);
    if (c.mtp) {
      rec.mtp_h.assign(e.mtp_h.data(), e.mtp_h.data() + e.mtp_h.size());
      rec.hidden.resize(n * static_cast<std::size_t>(c.d_model));
    }
  }
}

void engine_batch::run() {
  const int d = cfg().d_model;
  impl& L = *lead_;
  begin_round();
  std::memcpy(L.ids.data(), tokens_.data(), sizeof(token_id) * static_cast<std::size_t>(n_));
  const auto* ids = reinterpret_cast<const std::int32_t*>(L.ids.data());
  embed_rows(k(), ids, L.weights->linear("embed"), L.x.data(), n_, d);
  if (cfg().mtp) embed_rows(k(), ids, L.weights->linear("embed"), L.emb.data(), n_, d);

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
  for (impl* e : s_) {
    e->state->set_valid_length(e->round.start + e->round.rows);
    const std::size_t vocab = static_cast<std::size_t>(cfg().vocab), last = e->round.rows - 1;
    e->logits.assign(e->round.logits.begin() + static_cast<long>(last * vocab), e->round.logits.end());
    if (cfg().mtp)
      e->draft_logits.assign(e->round.draft_logits.begin() + static_cast<long>(last * vocab),
                             e->round.draft_logits.end());
  }
}

void engine_batch::gdn_layer(int layer, int lg) {
  const model_config& c = cfg();
  const int d = c.d_model, ch = c.conv_channels(), hv = c.gdn_hv, hk = c.gdn_hk;
  const int dk = c.gdn_dk, dv = c.gdn_dv, m = n_;
  const std::string p = "layers." + std::to_string(layer) + ".";
  impl& L = *lead_;
  k().rmsnorm(L.x.data(), d, weight(p + "attn_norm"), L.xn.data(), d, m, d, c.norm_eps);
  dense(ch, d, L.xn.data(), d, p + "gdn.qkv", 0.0f, L.proj.data(), ch);
  dense(hv * dv, d, L.xn.data(), d, p + "gdn.z", 0.0f, L.z.data(), hv * dv);
  dense(hv, d, L.xn.data(), d, p + "gdn.a", 0.0f, L.gate_a.data(), hv);
  dense(hv, d, L.xn.data(), d, p + "gdn.b", 0.0f, L.gate_b.data(), hv);

  const long tail_floats = static_cast<long>(c.conv_kernel - 1) * ch;
  const std::size_t uch = static_cast<std::size_t>(ch), uhv = static_cast<std::size_t>(hv);
  // Where row r's inputs to the recurrence go in its slot's record: [gdn layer][row][...].
  auto rec_row = [&](int r, std::size_t width) {
    const std::size_t n = slot_of(r).round.rows;
    return (static_cast<std::size_t>(lg) * n + static_cast<std::size_t>(at(r).local)) * width;
  };
  for (int r = 0; r < m; ++r) {
    const float* in = L.proj.data() + static_cast<long>(r) * ch;
    if (keeps(r)) std::memcpy(slot_of(r).round.proj.data() + rec_row(r, uch), in, sizeof(float) * uch);
    k().causal_conv1d(in, weight(p + "gdn.conv"), slot_of(r).gdn_conv.data() + lg * tail_floats,
                      L.qkv.data() + static_cast<long>(r) * ch, 1, ch, c.conv_kernel);
  }
  k().l2norm(L.qkv.data(), ch, m, hk, dk, 1e-6f);
  k().l2norm(L.qkv.data() + hk * dk, ch, m, hk, dk, 1e-6f);
  k().gdn_gates(L.gate_a.data(), L.gate_b.data(), weight(p + "gdn.a_log"), weight(p + "gdn.dt_bias"),
                L.g.data(), L.beta.data(), m, hv);

  const kernels::gdn_shape one{1, hk, hv, dk, dv, ch, 1.0f / std::sqrt(static_cast<float>(dk)), c.gdn_chunk};
  const long s_floats = static_cast<long>(hv) * dk * dv;
  for (int r = 0; r < m; ++r) {
    const float* qkv = L.qkv.data() + static_cast<long>(r) * ch;
    const float* g = L.g.data() + r * hv;
    const float* beta = L.beta.data() + r * hv;
    if (keeps(r)) {
      impl::round_record& rec = slot_of(r).round;
      std::memcpy(rec.qkv.data() + rec_row(r, uch), qkv, sizeof(float) * uch);
      std::memcpy(rec.g.data() + rec_row(r, uhv), g, sizeof(float) * uhv);
      std::memcpy(rec.beta.data() + rec_row(r, uhv), beta, sizeof(float) * uhv);
    }
    k().gdn_step(qkv, g, beta, slot_of(r).gdn_s.data() + lg * s_floats,
                 L.mix.data() + static_cast<long>(r) * hv * dv, one);
  }
  k().gated_rmsnorm(L.mix.data(), L.z.data(), weight(p + "gdn.norm"), L.mix.data(), m, hv, dv, c.norm_eps);
  dense(d, hv * dv, L.mix.data(), hv * dv, p + "gdn.out", 1.0f, L.x.data(), d);
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
    dense(2 * nq * hd, d, L.xn.data(), d, p + "attn.q", 0.0f, L.proj.data(), 2 * nq * hd);
    k().rmsnorm(L.proj.data(), 2 * hd, weight(p + "attn.q_norm"), L.attn_q.data(), hd, m * nq, hd,
                c.norm_eps);
    dense(nkv * hd, d, L.xn.data(), d, p + "attn.k", 0.0f, L.attn_k.data(), row);
    for (int h = 0; h < nkv; ++h)
      k().rmsnorm(L.attn_k.data() + h * hd, row, weight(p + "attn.k_norm"), bk + h * hd, row, m, hd,
                  c.norm_eps);
  } else {
    dense(nq * hd, d, L.xn.data(), d, p + "attn.q", 0.0f, L.attn_q.data(), nq * hd);
    dense(row, d, L.xn.data(), d, p + "attn.k", 0.0f, bk, row);
  }
  dense(row, d, L.xn.data(), d, p + "attn.v", 0.0f, bv, row);

  const int rot = c.rotary_dims();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int r = 0; r < m; ++r) {
    impl& e = slot_of(r);
    const int pos = at(r).pos;
    float* q = L.attn_q.data() + static_cast<long>(r) * nq * hd;
    float* kb = bk + static_cast<long>(r) * row;
    // A generated (text) row: its rotary position is its row less what the prompt's images skip.
    const int rp = e.text_position(static_cast<std::size_t>(pos));
    k().rope(q, nq * hd, 1, nq, hd, rot, rp, c.rope_base);
    k().rope(kb, row, 1, nkv, hd, rot, rp, c.rope_base);
    // The slot's K/V of this layer from row 0, and where this token's row goes.
    const int stride = draft ? row : c.count_attention() * row;
    float* k0 = draft ? e.mtp_k.data() : e.kv_k.data() + static_cast<long>(la) * row;
    float* v0 = draft ? e.mtp_v.data() : e.kv_v.data() + static_cast<long>(la) * row;
    const long off = static_cast<long>(pos) * stride;
    std::memcpy(k0 + off, kb, sizeof(float) * static_cast<std::size_t>(row));
    std::memcpy(v0 + off, bv + static_cast<long>(r) * row, sizeof(float) * static_cast<std::size_t>(row));
    const kernels::attention_shape sh{1, pos, nq, nkv, hd, nq * hd, stride, nq * hd, scale};
    attention_by_heads(k(), q, k0, v0, L.attn_o.data() + static_cast<long>(r) * nq * hd, sh, L.attn_scratch);
  }
  if (c.layout == model_layout::qwen35)
    k().sigmoid_gate(L.attn_o.data(), hd, L.proj.data() + hd, 2 * hd, m * nq, hd);
  dense(d, nq * hd, L.attn_o.data(), nq * hd, p + "attn.o", 1.0f, xs, d);
}

void engine_batch::mlp_block(const std::string& p, float* xs) {
  const model_config& c = cfg();
  const int d = c.d_model, h = c.mlp_hidden, m = n_;
  impl& L = *lead_;
  k().rmsnorm(xs, d, weight(p + "mlp_norm"), L.xn.data(), d, m, d, c.norm_eps);
  if (c.is_moe()) {
    moe_block(k(), true, *L.weights, p + "moe.", m, L.xn.data(), xs, L.moe, L.scratch);
    return;
  }
  dense(2 * h, d, L.xn.data(), d, p + "mlp.gate_up", 0.0f, L.proj.data(), 2 * h);
  k().swiglu(L.proj.data(), L.mix.data(), m, h);
  dense(d, h, L.mix.data(), h, p + "mlp.down", 1.0f, xs, d);
}

// engine_forward.cpp's mtp_layer one row at a time: row r of the draft layer's input is [the
// hidden row before it | its token's embedding] (in the layout's order), the hidden row before
// a slot's first row being its mtp.h_last.
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
  for (int r = 0; r < m; ++r) {
    const float* before = at(r).local == 0 ? slot_of(r).mtp_h.data() : hidden + static_cast<long>(r - 1) * d;
    k().rmsnorm(before, d, weight("mtp.norm_h"), cat_h + static_cast<long>(r) * 2 * d, 2 * d, 1, d,
                c.norm_eps);
  }
  k().rmsnorm(L.emb.data(), d, weight("mtp.norm_e"), cat_e, 2 * d, m, d, c.norm_eps);
  dense(d, 2 * d, L.cat.data(), 2 * d, "mtp.in", 0.0f, L.xm.data(), d);
  kernels::device_sync(L.where);
  const std::size_t ud = static_cast<std::size_t>(d);
  for (int r = 0; r < m; ++r) {
    impl& e = slot_of(r);
    const float* h = hidden + static_cast<long>(r) * d;
    if (e.round.saved)
      std::memcpy(e.round.hidden.data() + static_cast<std::size_t>(at(r).local) * ud, h, sizeof(float) * ud);
    if (static_cast<std::size_t>(at(r).local) + 1 == e.round.rows)
      std::memcpy(e.mtp_h.data(), h, sizeof(float) * ud);
  }

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
  dense(c.vocab, d, L.xn.data(), d, "lm_head", 0.0f, L.batch_logits.data(), c.vocab);
  kernels::device_sync(L.where);
  for (int r = 0; r < m; ++r) {
    const float* out = L.batch_logits.data() + static_cast<std::size_t>(r) * vocab;
    auto& into = draft ? slot_of(r).round.draft_logits : slot_of(r).round.logits;
    std::memcpy(into.data() + static_cast<std::size_t>(at(r).local) * vocab, out, sizeof(float) * vocab);
  }
}

void engine_batch::draft_step(const float* h, int pos, std::vector<float>& logits, float* h_out) {
  const model_config& c = cfg();
  const int d = c.d_model;
  const bool qwen = c.layout == model_layout::qwen35;
  impl& L = *lead_;
  rows_.front().pos = pos;
  std::memcpy(L.ids.data(), tokens_.data(), sizeof(token_id));
  embed_rows(k(), reinterpret_cast<const std::int32_t*>(L.ids.data()), L.weights->linear("embed"),
             L.emb.data(), 1, d);
  float* cat_h = L.cat.data() + (qwen ? d : 0);
  float* cat_e = L.cat.data() + (qwen ? 0 : d);
  k().rmsnorm(h, d, weight("mtp.norm_h"), cat_h, 2 * d, 1, d, c.norm_eps);
  k().rmsnorm(L.emb.data(), d, weight("mtp.norm_e"), cat_e, 2 * d, 1, d, c.norm_eps);
  dense(d, 2 * d, L.cat.data(), 2 * d, "mtp.in", 0.0f, L.xm.data(), d);
  attention_block("mtp.", L.xm.data(), 0, true);
  mlp_block("mtp.", L.xm.data());
  k().rmsnorm(L.xm.data(), d, weight("mtp.final_norm"), L.xn.data(), d, 1, d, c.norm_eps);
  logits.resize(static_cast<std::size_t>(c.vocab));
  dense(c.vocab, d, L.xn.data(), d, "lm_head", 0.0f, logits.data(), c.vocab);
  std::memcpy(h_out, qwen ? L.xn.data() : L.xm.data(), sizeof(float) * static_cast<std::size_t>(d));
}

void engine_draft_step(engine& e, token_id next, const float* h, int pos, std::vector<float>& logits,
                       float* h_out) {
  engine_batch({&e}, {{next}}).draft_step(h, pos, logits, h_out);
}

void forward_batch(const std::vector<engine*>& slots, const std::vector<std::vector<token_id>>& rows) {
  engine_batch::check(slots, rows);
  if (slots.front()->where() != kernels::backend::cpu) {
    engine_batch::solo(slots, rows);
    return;
  }
  engine_batch(slots, rows).run();
}

void decode_batch(const std::vector<engine*>& slots, const std::vector<token_id>& tokens) {
  if (tokens.size() != slots.size())
    throw std::invalid_argument("decode_batch: " + std::to_string(tokens.size()) + " tokens for " +
                                std::to_string(slots.size()) + " slots");
  std::vector<std::vector<token_id>> rows;
  rows.reserve(tokens.size());
  for (token_id t : tokens) rows.push_back({t});
  forward_batch(slots, rows);
}

}  // namespace anchorage
