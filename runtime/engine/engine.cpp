#include "runtime/engine/engine.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "runtime/engine/compute_threads.hpp"
#include "runtime/engine/engine_batch.hpp"
#include "runtime/engine/engine_impl.hpp"

namespace anchorage {
namespace {

std::string arithmetic_config(const model_config& c) {
  // Everything outside the weights and the layout that changes the arithmetic.
  return "pattern=" + c.pattern + ";gdn_chunk=" + std::to_string(c.gdn_chunk) +
         ";conv=" + std::to_string(c.conv_kernel) + ";eps=" + std::to_string(c.norm_eps) +
         ";rope=" + std::to_string(c.rope_base) + ";mtp=" + std::to_string(c.mtp) +
         (c.layout == model_layout::reference ? std::string()
                                              : std::string(";layout=") + to_string(c.layout) +
                                                    ";rope_dims=" + std::to_string(c.rotary_dims()) +
                                                    ";tied=" + std::to_string(c.tied_embeddings)) +
         (c.is_moe() ? ";experts=" + std::to_string(c.n_experts) + "/" + std::to_string(c.experts_used) : "");
}

}  // namespace

engine::impl::impl(std::shared_ptr<const engine_weights> w)
    : weights(std::move(w)), cfg(weights->config()), where(weights->where()), k(kernels::ops_for(where)) {
  const kernels::backend b = where;
  const std::size_t cap = static_cast<std::size_t>(cfg.ctx_size);
  const int ng = cfg.count_gdn(), na = cfg.count_attention(), ch = cfg.conv_channels();
  const int d = cfg.d_model;
  gdn_s = device_buffer(b, static_cast<std::size_t>(ng) * cfg.gdn_hv * cfg.gdn_dk * cfg.gdn_dv);
  gdn_conv = device_buffer(b, static_cast<std::size_t>(ng) * (cfg.conv_kernel - 1) * ch);
  const std::size_t kv_row_all = static_cast<std::size_t>(na) * cfg.kv_row();
  kv_k = device_buffer(b, cap * kv_row_all);
  kv_v = device_buffer(b, cap * kv_row_all);

  state_layout layout;
  layout.grid = cfg.grid;
  std::vector<engine_state::region> sections, views;
  auto add_section = [&](const std::string& name, device_buffer& buf) {
    layout.sections.push_back({name, buf.bytes()});
    sections.push_back({buf.data(), buf.bytes()});
  };
  auto add_view = [&](const std::string& name, device_buffer& buf, std::size_t row_floats) {
    layout.views.push_back({name, row_floats * sizeof(float), cap});
    views.push_back({buf.data(), row_floats * sizeof(float)});
  };
  if (ng > 0) {
    add_section("gdn.S", gdn_s);
    if (cfg.conv_kernel > 1) add_section("gdn.conv", gdn_conv);
  }
  if (na > 0) {
    add_view("K", kv_k, kv_row_all);
    add_view("V", kv_v, kv_row_all);
  }
  if (cfg.mtp) {
    mtp_k = device_buffer(b, cap * cfg.kv_row());
    mtp_v = device_buffer(b, cap * cfg.kv_row());
    mtp_h = device_buffer(b, static_cast<std::size_t>(d));
    add_section("mtp.h_last", mtp_h);
    add_view("mtp.K", mtp_k, static_cast<std::size_t>(cfg.kv_row()));
    add_view("mtp.V", mtp_v, static_cast<std::size_t>(cfg.kv_row()));
  }

  // 8-bit activations (compute_threads.hpp) change a stored product's bits on the cpu.
  const bool q8 = b == kernels::backend::cpu && current_product_activations() == product_activations::q8;
  const std::string flags =
      kernels::arithmetic_flags(b) + ";" + arithmetic_config(cfg) + (q8 ? ";activations:q8" : "");
  scratch.q8 = q8;  // this engine's products keep the setting its fingerprint names
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  const std::uint64_t wd = weights->digest();
  XXH3_64bits_update(st, &wd, sizeof wd);
  XXH3_64bits_update(st, engine_code_version, std::strlen(engine_code_version));
  XXH3_64bits_update(st, flags.data(), flags.size());
  const std::string lay = layout.describe();
  XXH3_64bits_update(st, lay.data(), lay.size());
  layout.fingerprint = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  state = std::make_unique<engine_state>(b, std::move(layout), std::move(sections), std::move(views));

  const std::size_t m = static_cast<std::size_t>(cfg.grid);
  const bool qwen = cfg.layout == model_layout::qwen35;
  // proj also takes the qwen35 q_proj output, [query | gate] per head
  const std::size_t wide =
      static_cast<std::size_t>(std::max({ch, 2 * cfg.mlp_hidden, qwen ? 2 * cfg.n_q * cfg.head_dim : 0}));
  const std::size_t mixw =
      static_cast<std::size_t>(std::max({cfg.gdn_hv * cfg.gdn_dv, cfg.n_q * cfg.head_dim, cfg.mlp_hidden}));
  ids = device_buffer(b, m);
  x = device_buffer(b, m * d);
  xn = device_buffer(b, m * d);
  proj = device_buffer(b, m * wide);
  qkv = device_buffer(b, m * ch);
  z = device_buffer(b, m * cfg.gdn_hv * cfg.gdn_dv);
  gate_a = device_buffer(b, m * cfg.gdn_hv);
  gate_b = device_buffer(b, m * cfg.gdn_hv);
  g = device_buffer(b, m * cfg.gdn_hv);
  beta = device_buffer(b, m * cfg.gdn_hv);
  mix = device_buffer(b, m * mixw);
  attn_q = device_buffer(b, m * cfg.n_q * cfg.head_dim);
  attn_o = device_buffer(b, m * cfg.n_q * cfg.head_dim);
  if (qwen) attn_k = device_buffer(b, m * cfg.kv_row());
  const kernels::gdn_shape gs{cfg.grid,   cfg.gdn_hk, cfg.gdn_hv, cfg.gdn_dk,
                              cfg.gdn_dv, ch,         1.0f,       cfg.gdn_chunk};
  gdn_scratch = device_buffer(b, static_cast<std::size_t>(kernels::gdn_chunk_scratch(gs)));
  logits_dev = device_buffer(b, static_cast<std::size_t>(cfg.vocab));
  if (cfg.mtp) {
    emb = device_buffer(b, m * d);
    cat = device_buffer(b, m * 2 * d);
    xm = device_buffer(b, m * d);
    draft_dev = device_buffer(b, static_cast<std::size_t>(cfg.vocab));
    if (qwen) hn = device_buffer(b, m * d);
  }
}

engine::engine(const model_config& config, const tensor_map& weights, kernels::backend where)
    : engine(std::make_shared<const engine_weights>(config, weights, where)) {}

engine::engine(std::shared_ptr<const engine_weights> weights) {
  if (!weights) throw std::invalid_argument("engine: no weights");
  p_ = std::make_unique<impl>(std::move(weights));
}

engine::~engine() = default;

const model_config& engine::config() const { return p_->cfg; }
kernels::backend engine::where() const { return p_->where; }
const std::shared_ptr<const engine_weights>& engine::weights() const { return p_->weights; }
state_adapter& engine::cache_state() { return *p_->state; }
const state_adapter& engine::cache_state() const { return *p_->state; }

void engine::reset() {
  p_->queued.clear();
  p_->queued_at = 0;
  p_->state->zero_sections();
  p_->state->set_valid_length(0);
  p_->logits.clear();
  p_->draft_logits.clear();
  p_->round = impl::round_record{};
  p_->media = prompt_media();
}

void engine::set_media(prompt_media media) {
  if (!media.empty() && p_->cfg.layout != model_layout::qwen35)
    throw std::invalid_argument("images need the qwen35 layout (its multimodal rotary positions)");
  for (const image_span& s : media.images())
    if (s.embeddings && s.embeddings->size() != s.rows() * static_cast<std::size_t>(p_->cfg.d_model))
      throw std::invalid_argument("image rows from " + std::to_string(s.start) + " need " +
                                  std::to_string(s.rows()) +
                                  " embeddings of d_model = " + std::to_string(p_->cfg.d_model) + " floats");
  p_->media = std::move(media);
}

const prompt_media& engine::media() const { return p_->media; }

void engine::begin_prefill(const std::vector<token_id>& tokens) {
  if (prefill_remaining() > 0) throw std::logic_error("begin_prefill while another prefill is queued");
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const token_id t = tokens[i];
    if (t < 0) {
      const image_span* s = p_->media.span_of(length() + i);
      if (s && s->embeddings) continue;  // an image row
    }
    if (t < 0 || t >= p_->cfg.vocab)
      throw std::invalid_argument(
          "token id " + std::to_string(t) + " is outside the vocabulary [0, " +
          std::to_string(p_->cfg.vocab) + ")" +
          (t < 0 ? " and at a row no image of set_media (with its embeddings) covers" : ""));
  }
  const std::size_t end = length() + tokens.size();
  if (end > static_cast<std::size_t>(p_->cfg.ctx_size))
    throw std::length_error("sequence of " + std::to_string(end) + " tokens exceeds the context size " +
                            std::to_string(p_->cfg.ctx_size));
  p_->queued = tokens;
  p_->queued_at = 0;
}

void engine::abandon_prefill() {
  p_->queued.clear();
  p_->queued_at = 0;
}

std::size_t engine::prefill_remaining() const { return p_->queued.size() - p_->queued_at; }

bool engine::prefill_step() {
  const std::size_t left = prefill_remaining();
  if (left == 0) return false;
  const std::size_t grid = static_cast<std::size_t>(p_->cfg.grid);
  const std::size_t pos = length();
  const std::size_t next_line = (pos / grid + 1) * grid;
  // A chunk also ends where an image does, in a cold prefill and a resumed one alike, so a state
  // kept right after an image (its anchor) is the cold prefill's there, bit for bit.
  const std::size_t m = std::min({left, next_line - pos, p_->media.next_end(pos) - pos});
  p_->round.rows = 0;
  p_->forward_rows(p_->queued.data() + p_->queued_at, static_cast<int>(m), true);
  p_->queued_at += m;
  p_->state->set_valid_length(pos + m);
  if (prefill_remaining() == 0) {
    p_->queued.clear();
    p_->queued_at = 0;
    return false;
  }
  return true;
}

void engine::prefill(const std::vector<token_id>& tokens) {
  begin_prefill(tokens);
  while (prefill_step()) {
  }
}

void engine::decode(token_id t) {
  if (prefill_remaining() > 0) throw std::logic_error("decode while a prefill is queued");
  if (t < 0 || t >= p_->cfg.vocab)
    throw std::invalid_argument("token id " + std::to_string(t) + " is outside the vocabulary");
  if (length() + 1 > static_cast<std::size_t>(p_->cfg.ctx_size))
    throw std::length_error("decode past the context size " + std::to_string(p_->cfg.ctx_size));
  if (p_->where == kernels::backend::cpu) {
    forward_batch({this}, {{t}});
    return;
  }
  p_->forward_rows(&t, 1, false);
  p_->state->set_valid_length(length() + 1);
  p_->round.rows = 0;
}

const std::vector<float>& engine::last_logits() const { return p_->logits; }
const std::vector<float>& engine::last_draft_logits() const { return p_->draft_logits; }

}  // namespace anchorage
