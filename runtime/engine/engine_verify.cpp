// A verify round's engine side (docs/SPECULATIVE.md): forwarding several rows of one sequence in
// decode arithmetic (forward_batch), keeping only the first rows the drafts earned, and the
// draft layer's proposals.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "runtime/engine/engine_batch.hpp"
#include "runtime/engine/engine_impl.hpp"

namespace anchorage {

void engine::forward(const std::vector<token_id>& tokens) { forward_batch({this}, {tokens}); }

std::size_t engine::round_rows() const { return p_->round.rows; }

std::vector<float> engine::row_logits(std::size_t i) const {
  const auto& r = p_->round;
  if (i >= r.rows)
    throw std::out_of_range("row_logits: row " + std::to_string(i) + " of " + std::to_string(r.rows));
  const std::size_t v = static_cast<std::size_t>(p_->cfg.vocab);
  return {r.logits.begin() + static_cast<long>(i * v), r.logits.begin() + static_cast<long>((i + 1) * v)};
}

std::vector<float> engine::row_draft_logits(std::size_t i) const {
  const auto& r = p_->round;
  if (i >= r.rows) throw std::out_of_range("row_draft_logits: row " + std::to_string(i));
  if (r.draft_logits.empty()) return {};
  const std::size_t v = static_cast<std::size_t>(p_->cfg.vocab);
  return {r.draft_logits.begin() + static_cast<long>(i * v),
          r.draft_logits.begin() + static_cast<long>((i + 1) * v)};
}

// The state before the round, then the kept rows' stored inputs through the same two kernels
// the round ran them through, one row at a time: the convolution (for its tail) and the delta
// rule (for gdn.S). Everything else a row wrote is position-indexed and goes with the length.
void engine::keep_rows(std::size_t n) {
  impl& e = *p_;
  auto& rec = e.round;
  if (n == 0 || n > rec.rows)
    throw std::invalid_argument("keep_rows: " + std::to_string(n) + " of " + std::to_string(rec.rows) +
                                " rows");
  if (length() != rec.start + rec.rows)
    throw std::logic_error("keep_rows: the engine changed since the round");
  if (n == rec.rows) return;
  const model_config& c = e.cfg;
  const int ch = c.conv_channels(), hv = c.gdn_hv, dk = c.gdn_dk, dv = c.gdn_dv;
  const std::size_t uch = static_cast<std::size_t>(ch), uhv = static_cast<std::size_t>(hv);
  std::memcpy(e.gdn_s.data(), rec.s.data(), sizeof(float) * rec.s.size());
  std::memcpy(e.gdn_conv.data(), rec.conv.data(), sizeof(float) * rec.conv.size());
  std::vector<float> conv_out(uch), mix(uhv * static_cast<std::size_t>(dv));
  const kernels::gdn_shape one{1,          c.gdn_hk, hv, dk, dv, ch, 1.0f / std::sqrt(static_cast<float>(dk)),
                               c.gdn_chunk};
  const long tail_floats = static_cast<long>(c.conv_kernel - 1) * ch;
  const long s_floats = static_cast<long>(hv) * dk * dv;
  int lg = 0;
  for (int layer = 0; layer < c.n_layers; ++layer) {
    if (!c.is_gdn(layer)) continue;
    const float* w = e.weight("layers." + std::to_string(layer) + ".gdn.conv");
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t at = static_cast<std::size_t>(lg) * rec.rows + i;
      e.k.causal_conv1d(rec.proj.data() + at * uch, w, e.gdn_conv.data() + lg * tail_floats, conv_out.data(),
                        1, ch, c.conv_kernel);
      e.k.gdn_step(rec.qkv.data() + at * uch, rec.g.data() + at * uhv, rec.beta.data() + at * uhv,
                   e.gdn_s.data() + lg * s_floats, mix.data(), one);
    }
    ++lg;
  }
  const std::size_t vocab = static_cast<std::size_t>(c.vocab), d = static_cast<std::size_t>(c.d_model);
  if (c.mtp) {
    std::memcpy(e.mtp_h.data(), rec.hidden.data() + (n - 1) * d, sizeof(float) * d);
    e.draft_logits.assign(rec.draft_logits.begin() + static_cast<long>((n - 1) * vocab),
                          rec.draft_logits.begin() + static_cast<long>(n * vocab));
  }
  e.logits.assign(rec.logits.begin() + static_cast<long>((n - 1) * vocab),
                  rec.logits.begin() + static_cast<long>(n * vocab));
  rec.logits.resize(n * vocab);
  if (c.mtp) rec.draft_logits.resize(n * vocab);
  rec.rows = n;
  rec.saved = false;
  e.state->set_valid_length(rec.start + n);
}

std::vector<token_id> engine::draft(token_id next, int k, const std::vector<bool>* allowed) {
  impl& e = *p_;
  const model_config& c = e.cfg;
  std::vector<token_id> out;
  if (!c.mtp || k <= 0 || e.where != kernels::backend::cpu || prefill_remaining() > 0) return out;
  if (next < 0 || next >= c.vocab) throw std::invalid_argument("draft: token id " + std::to_string(next));
  const std::size_t d = static_cast<std::size_t>(c.d_model);
  std::vector<float> h(e.mtp_h.data(), e.mtp_h.data() + d), h_next(d), logits;
  token_id tok = next;
  for (int i = 0; i < k; ++i) {
    const std::size_t pos = length() + static_cast<std::size_t>(i);
    if (pos + 1 >= static_cast<std::size_t>(c.ctx_size)) break;  // room for the round's rows
    engine_draft_step(*this, tok, h.data(), static_cast<int>(pos), logits, h_next.data());
    const int limit = allowed ? std::min(c.vocab, static_cast<int>(allowed->size())) : c.vocab;
    int best = -1;
    for (int t = 0; t < limit; ++t)
      if ((!allowed || (*allowed)[static_cast<std::size_t>(t)]) &&
          (best < 0 || logits[static_cast<std::size_t>(t)] > logits[static_cast<std::size_t>(best)]))
        best = t;
    if (best < 0) break;
    out.push_back(best);
    tok = best;
    h.swap(h_next);
  }
  return out;
}

}  // namespace anchorage
