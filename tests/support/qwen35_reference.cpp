#include "tests/support/qwen35_reference.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace anchorage::testing {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }
double softplus(double x) { return std::log1p(std::exp(x)); }

// x * rsqrt(mean(x^2) + eps) over n values
void rms(double* x, int n, double eps) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const double r = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) x[i] *= r;
}

}  // namespace

qwen35_reference::qwen35_reference(const model_config& c, const tensor_map& w, qwen35_reference_faults f)
    : c_(c), w_(w), f_(f), h_prev_(static_cast<std::size_t>(c.d_model), 0.0) {
  const int ng = c.count_gdn();
  conv_.assign(static_cast<std::size_t>(ng),
               std::vector<vec>(static_cast<std::size_t>(c.conv_kernel - 1), vec(c.conv_channels(), 0.0)));
  s_.assign(static_cast<std::size_t>(ng), vec(static_cast<std::size_t>(c.gdn_hv) * c.gdn_dk * c.gdn_dv, 0.0));
  k_.resize(static_cast<std::size_t>(c.count_attention() + 1));
  v_.resize(k_.size());
}

qwen35_reference::vec qwen35_reference::linear(const std::string& name, const vec& x) const {
  const tensor& w = t(name);
  const std::size_t out = static_cast<std::size_t>(w.shape[0]), in = static_cast<std::size_t>(w.shape[1]);
  vec y(out, 0.0);
  for (std::size_t o = 0; o < out; ++o) {
    double acc = 0;
    for (std::size_t i = 0; i < in; ++i) acc += static_cast<double>(w.data[o * in + i]) * x[i];
    y[o] = acc;
  }
  return y;
}

qwen35_reference::vec qwen35_reference::norm(const vec& x, const std::string& weight) const {
  vec y = x;
  rms(y.data(), static_cast<int>(y.size()), c_.norm_eps);
  const tensor& w = t(weight);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] *= (f_.plain_norms ? 0.0 : 1.0) + w.data[i];
  return y;
}

qwen35_reference::vec qwen35_reference::gdn(int layer, int index, const vec& x) {
  const std::string p = "model.layers." + std::to_string(layer) + ".linear_attn.";
  const int hk = c_.gdn_hk, hv = c_.gdn_hv, dk = c_.gdn_dk, dv = c_.gdn_dv, kk = c_.conv_kernel;
  const int ch = c_.conv_channels();
  const vec qkv = linear(p + "in_proj_qkv.weight", x);
  const vec z = linear(p + "in_proj_z.weight", x);
  const vec b = linear(p + "in_proj_b.weight", x);
  const vec a = linear(p + "in_proj_a.weight", x);

  // causal depthwise conv over the last kk inputs (tap kk-1 the current one), then SiLU
  auto& hist = conv_[static_cast<std::size_t>(index)];
  const tensor& cw = t(p + "conv1d.weight");
  vec y(static_cast<std::size_t>(ch));
  for (int c = 0; c < ch; ++c) {
    double acc = 0;
    for (int j = 0; j < kk; ++j) {
      const double in = j < kk - 1 ? hist[static_cast<std::size_t>(j)][static_cast<std::size_t>(c)]
                                   : qkv[static_cast<std::size_t>(c)];
      acc += static_cast<double>(cw.data[static_cast<std::size_t>(c * kk + j)]) * in;
    }
    y[static_cast<std::size_t>(c)] = silu(acc);
  }
  if (kk > 1) {
    hist.erase(hist.begin());
    hist.push_back(qkv);
  }

  double* q = y.data();
  double* k = y.data() + hk * dk;
  const double* v = y.data() + 2 * hk * dk;
  for (int h = 0; h < hk; ++h) {
    for (double* u : {q + h * dk, k + h * dk}) {
      double ss = 0;
      for (int i = 0; i < dk; ++i) ss += u[i] * u[i];
      const double r = 1.0 / std::sqrt(ss + 1e-6);
      for (int i = 0; i < dk; ++i) u[i] *= r;
    }
    for (int i = 0; i < dk; ++i) q[h * dk + i] /= std::sqrt(static_cast<double>(dk));
  }

  const tensor& a_log = t(p + "A_log");
  const tensor& dt_bias = t(p + "dt_bias");
  const tensor& nw = t(p + "norm.weight");
  vec& s = s_[static_cast<std::size_t>(index)];
  vec o(static_cast<std::size_t>(hv * dv));
  for (int h = 0; h < hv; ++h) {
    const int kh = f_.tiled_value_heads ? h % hk : h / (hv / hk);
    const double beta = sigmoid(b[static_cast<std::size_t>(h)]);
    const double g = -std::exp(static_cast<double>(a_log.data[static_cast<std::size_t>(h)])) *
                     softplus(a[static_cast<std::size_t>(h)] + dt_bias.data[static_cast<std::size_t>(h)]);
    double* st = s.data() + static_cast<std::size_t>(h) * dk * dv;  // S[i][j], i < dk, j < dv
    const double* kv = k + kh * dk;
    const double* qv = q + kh * dk;
    const double* vv = v + h * dv;
    for (int i = 0; i < dk * dv; ++i) st[i] *= std::exp(g);
    for (int j = 0; j < dv; ++j) {
      double skj = 0;
      for (int i = 0; i < dk; ++i) skj += st[i * dv + j] * kv[i];
      const double delta = beta * (vv[j] - skj);
      for (int i = 0; i < dk; ++i) st[i * dv + j] += kv[i] * delta;
    }
    double* oh = o.data() + h * dv;
    for (int j = 0; j < dv; ++j) {
      double acc = 0;
      for (int i = 0; i < dk; ++i) acc += st[i * dv + j] * qv[i];
      oh[j] = acc;
    }
    // gated RMSNorm: norm, times the plain weight, times silu(z)
    rms(oh, dv, c_.norm_eps);
    for (int j = 0; j < dv; ++j)
      oh[j] *= nw.data[static_cast<std::size_t>(j)] * silu(z[static_cast<std::size_t>(h * dv + j)]);
  }
  return linear(p + "out_proj.weight", o);
}

void qwen35_reference::rotate(double* x) const {
  const int rot = c_.rotary_dims(), half = rot / 2;
  for (int i = 0; i < half; ++i) {
    const double inv_freq = std::pow(static_cast<double>(c_.rope_base), -2.0 * i / rot);
    const double ang = pos_ * inv_freq, cs = std::cos(ang), sn = std::sin(ang);
    double* u = f_.interleaved_rotary ? x + 2 * i : x + i;
    double* w = f_.interleaved_rotary ? x + 2 * i + 1 : x + i + half;
    const double a = *u, b = *w;
    *u = a * cs - b * sn;
    *w = b * cs + a * sn;
  }
}

qwen35_reference::vec qwen35_reference::attention(const std::string& p, int index, const vec& x) {
  const int nh = c_.n_q, nkv = c_.n_kv, hd = c_.head_dim;
  const vec qg = linear(p + "self_attn.q_proj.weight", x);
  vec q(static_cast<std::size_t>(nh * hd)), gate(q.size());
  for (int h = 0; h < nh; ++h)
    for (int i = 0; i < hd; ++i) {
      const double first = qg[static_cast<std::size_t>(h * 2 * hd + i)];
      const double second = qg[static_cast<std::size_t>(h * 2 * hd + hd + i)];
      q[static_cast<std::size_t>(h * hd + i)] = f_.gate_first ? second : first;
      gate[static_cast<std::size_t>(h * hd + i)] = f_.gate_first ? first : second;
    }
  vec k = linear(p + "self_attn.k_proj.weight", x);
  const vec v = linear(p + "self_attn.v_proj.weight", x);
  auto head_norm = [&](vec& u, int heads, const std::string& w) {
    for (int h = 0; h < heads; ++h) {
      const vec part(u.begin() + h * hd, u.begin() + (h + 1) * hd);
      const vec n = norm(part, w);
      std::copy(n.begin(), n.end(), u.begin() + h * hd);
    }
  };
  head_norm(q, nh, p + "self_attn.q_norm.weight");
  head_norm(k, nkv, p + "self_attn.k_norm.weight");
  for (int h = 0; h < nh; ++h) rotate(q.data() + h * hd);
  for (int h = 0; h < nkv; ++h) rotate(k.data() + h * hd);
  auto& ks = k_[static_cast<std::size_t>(index)];
  auto& vs = v_[static_cast<std::size_t>(index)];
  ks.push_back(k);
  vs.push_back(v);

  vec o(static_cast<std::size_t>(nh * hd), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  for (int h = 0; h < nh; ++h) {
    const int kvh = h / (nh / nkv);
    vec score(ks.size());
    double mx = -1e300;
    for (std::size_t j = 0; j < ks.size(); ++j) {
      double dot = 0;
      for (int i = 0; i < hd; ++i)
        dot += q[static_cast<std::size_t>(h * hd + i)] * ks[j][static_cast<std::size_t>(kvh * hd + i)];
      score[j] = dot * scale;
      mx = std::max(mx, score[j]);
    }
    double sum = 0;
    for (auto& sc : score) sum += (sc = std::exp(sc - mx));
    for (std::size_t j = 0; j < ks.size(); ++j)
      for (int i = 0; i < hd; ++i)
        o[static_cast<std::size_t>(h * hd + i)] +=
            score[j] / sum * vs[j][static_cast<std::size_t>(kvh * hd + i)];
  }
  for (std::size_t i = 0; i < o.size(); ++i) o[i] *= sigmoid(gate[i]);
  return linear(p + "self_attn.o_proj.weight", o);
}

qwen35_reference::vec qwen35_reference::mlp(const std::string& p, const vec& x) const {
  const vec g = linear(p + "mlp.gate_proj.weight", x);
  const vec u = linear(p + "mlp.up_proj.weight", x);
  vec a(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) a[i] = silu(g[i]) * u[i];
  return linear(p + "mlp.down_proj.weight", a);
}

qwen35_reference::vec qwen35_reference::head(const vec& hn) const {
  return linear(c_.tied_embeddings ? "model.embed_tokens.weight" : "lm_head.weight", hn);
}

void qwen35_reference::forward(token_id tok) {
  const int d = c_.d_model;
  const tensor& emb = t("model.embed_tokens.weight");
  const vec e(emb.data.begin() + static_cast<long>(tok) * d,
              emb.data.begin() + static_cast<long>(tok + 1) * d);
  auto add = [](vec& h, const vec& y) {
    for (std::size_t i = 0; i < h.size(); ++i) h[i] += y[i];
  };
  vec h = e;
  int ig = 0, ia = 0;
  for (int i = 0; i < c_.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const vec xn = norm(h, p + "input_layernorm.weight");
    add(h, c_.is_gdn(i) ? gdn(i, ig++, xn) : attention(p, ia++, xn));
    add(h, mlp(p, norm(h, p + "post_attention_layernorm.weight")));
  }
  const vec hn = norm(h, "model.norm.weight");
  logits_ = head(hn);

  if (c_.mtp) {
    const vec en = norm(e, "mtp.pre_fc_norm_embedding.weight");
    const vec hp = norm(h_prev_, "mtp.pre_fc_norm_hidden.weight");
    vec cat = en;  // the embedding first
    cat.insert(cat.end(), hp.begin(), hp.end());
    vec x = linear("mtp.fc.weight", cat);
    const std::string p = "mtp.layers.0.";
    add(x, attention(p, c_.count_attention(), norm(x, p + "input_layernorm.weight")));
    add(x, mlp(p, norm(x, p + "post_attention_layernorm.weight")));
    draft_ = head(norm(x, "mtp.norm.weight"));
  }
  h_prev_ = hn;
  ++pos_;
}

}  // namespace anchorage::testing
