# A pure-Python Qwen3.5 forward with Hugging Face transformers' semantics (docs/QWEN35.md,
# "The layout": zero-centred RMSNorm, the GDN recurrence in its per-token form with value head h reading
# key head h // (Hv/Hk), gated attention with half-split partial RoPE), in double precision, on a
# safetensors file under the HF text-only names. It shares no code with the GGUF export, so that
# llama.cpp on an exported file can be checked against the model the HF weights define.
#   python3 qwen35_hf_reference.py WEIGHTS.safetensors CONFIG.json IDS.json
# CONFIG.json: {"d_model", "n_layers", "vocab", "pattern", "gdn_hk", "gdn_hv", "gdn_dk", "gdn_dv",
# "conv_kernel", "n_q", "n_kv", "head_dim", "rope_dims", "rope_base", "norm_eps", "tied"}.
# Prints the last position's logits minus their maximum, as a JSON array.
import json, math, struct, sys
path, cfg_path, ids_path = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = json.load(open(cfg_path))
raw = open(path, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
hdr = json.loads(raw[8:8+n]); base = 8 + n
W = {}
for k, v in hdr.items():
    if k == '__metadata__': continue
    a, b = v['data_offsets']
    flat = list(struct.unpack('<%df' % ((b-a)//4), raw[base+a:base+b]))
    W[k] = (v['shape'], flat)
def mat(name):
    shape, f = W[name]; r, c = shape[0], len(f)//shape[0]
    return [f[i*c:(i+1)*c] for i in range(r)]
def vec(name): return W[name][1]
def mv(M, x): return [sum(a*b for a, b in zip(row, x)) for row in M]
def rms(x, w, eps, centred):
    s = 1.0/math.sqrt(sum(v*v for v in x)/len(x) + eps)
    return [v*s*((1.0+g) if centred else g) for v, g in zip(x, w)]
silu = lambda v: v/(1.0+math.exp(-v))
sig = lambda v: 1.0/(1.0+math.exp(-v))
softplus = lambda v: math.log1p(math.exp(v)) if v < 20 else v
D, L, V = cfg["d_model"], cfg["n_layers"], cfg["vocab"]
pattern = cfg["pattern"]
Hk, Hv, dk, dv, K = cfg["gdn_hk"], cfg["gdn_hv"], cfg["gdn_dk"], cfg["gdn_dv"], cfg["conv_kernel"]
nq, nkv, hd, rot = cfg["n_q"], cfg["n_kv"], cfg["head_dim"], cfg["rope_dims"]
base_f, eps = cfg["rope_base"], cfg["norm_eps"]
ids = json.load(open(ids_path)); T = len(ids)
E = mat('model.embed_tokens.weight')
h = [list(E[t]) for t in ids]
for l in range(L):
    p = 'model.layers.%d.' % l
    x = [rms(r, vec(p+'input_layernorm.weight'), eps, True) for r in h]
    if pattern[l] == 'G':
        g_ = p + 'linear_attn.'
        Wqkv, Wz, Wb, Wa = mat(g_+'in_proj_qkv.weight'), mat(g_+'in_proj_z.weight'), mat(g_+'in_proj_b.weight'), mat(g_+'in_proj_a.weight')
        conv = vec(g_+'conv1d.weight'); C = 2*Hk*dk + Hv*dv
        A = vec(g_+'A_log'); dtb = vec(g_+'dt_bias'); nw = vec(g_+'norm.weight'); Wo = mat(g_+'out_proj.weight')
        pre = [mv(Wqkv, r) for r in x]
        S = [[[0.0]*dv for _ in range(dk)] for _ in range(Hv)]
        out = []
        for t in range(T):
            y = []
            for c in range(C):
                acc = 0.0
                for j in range(K):
                    tt = t - (K-1) + j
                    if tt >= 0: acc += conv[c*K + j] * pre[tt][c]
                y.append(silu(acc))
            q = [y[i*dk:(i+1)*dk] for i in range(Hk)]
            k = [y[Hk*dk + i*dk: Hk*dk + (i+1)*dk] for i in range(Hk)]
            v = [y[2*Hk*dk + i*dv: 2*Hk*dk + (i+1)*dv] for i in range(Hv)]
            def l2(u): s = 1.0/math.sqrt(sum(a*a for a in u) + 1e-6); return [a*s for a in u]
            q = [[a/math.sqrt(dk) for a in l2(u)] for u in q]; k = [l2(u) for u in k]
            z = mv(Wz, x[t]); b = mv(Wb, x[t]); a = mv(Wa, x[t])
            o_all = []
            for hh in range(Hv):
                kh = hh // (Hv//Hk)
                beta = sig(b[hh]); g = -math.exp(A[hh]) * softplus(a[hh] + dtb[hh]); dec = math.exp(g)
                Sh = S[hh]
                for i in range(dk):
                    for j in range(dv): Sh[i][j] *= dec
                kv = [sum(Sh[i][j]*k[kh][i] for i in range(dk)) for j in range(dv)]
                delta = [beta*(v[hh][j] - kv[j]) for j in range(dv)]
                for i in range(dk):
                    for j in range(dv): Sh[i][j] += k[kh][i]*delta[j]
                o = [sum(Sh[i][j]*q[kh][i] for i in range(dk)) for j in range(dv)]
                o = rms(o, nw, eps, False)
                o_all += [o[j]*silu(z[hh*dv+j]) for j in range(dv)]
            out.append(mv(Wo, o_all))
    else:
        a_ = p + 'self_attn.'
        Wq, Wk, Wv, Wo = mat(a_+'q_proj.weight'), mat(a_+'k_proj.weight'), mat(a_+'v_proj.weight'), mat(a_+'o_proj.weight')
        qn, kn = vec(a_+'q_norm.weight'), vec(a_+'k_norm.weight')
        def rope(u, pos):
            u = list(u); half = rot//2
            for i in range(half):
                f = pos * base_f ** (-(2*i)/rot); c, s = math.cos(f), math.sin(f)
                x1, x2 = u[i], u[i+half]
                u[i] = x1*c - x2*s; u[i+half] = x2*c + x1*s
            return u
        Q, G, Kc, Vc = [], [], [], []
        for t in range(T):
            qf = mv(Wq, x[t])
            Q.append([rope(rms(qf[hh*2*hd: hh*2*hd+hd], qn, eps, True), t) for hh in range(nq)])
            G.append([qf[hh*2*hd+hd: (hh+1)*2*hd] for hh in range(nq)])
            kf = mv(Wk, x[t]); vf = mv(Wv, x[t])
            Kc.append([rope(rms(kf[hh*hd:(hh+1)*hd], kn, eps, True), t) for hh in range(nkv)])
            Vc.append([vf[hh*hd:(hh+1)*hd] for hh in range(nkv)])
        out = []
        for t in range(T):
            o_all = []
            for hh in range(nq):
                kvh = hh // (nq//nkv)
                sc = [sum(a*b for a, b in zip(Q[t][hh], Kc[s][kvh]))/math.sqrt(hd) for s in range(t+1)]
                m = max(sc); e = [math.exp(v-m) for v in sc]; Z = sum(e)
                o = [sum(e[s]*Vc[s][kvh][j] for s in range(t+1))/Z for j in range(hd)]
                o_all += [o[j]*sig(G[t][hh][j]) for j in range(hd)]
            out.append(mv(Wo, o_all))
    h = [[a+b for a, b in zip(r, o)] for r, o in zip(h, out)]
    x = [rms(r, vec(p+'post_attention_layernorm.weight'), eps, True) for r in h]
    Wg, Wu, Wd = mat(p+'mlp.gate_proj.weight'), mat(p+'mlp.up_proj.weight'), mat(p+'mlp.down_proj.weight')
    h = [[a+b for a, b in zip(r, mv(Wd, [silu(g)*u for g, u in zip(mv(Wg, xx), mv(Wu, xx))]))] for r, xx in zip(h, x)]
last = rms(h[-1], vec('model.norm.weight'), eps, True)
logits = mv(mat('model.embed_tokens.weight' if cfg['tied'] else 'lm_head.weight'), last)
m = max(logits)
print(json.dumps([v - m for v in logits]))
