# The Qwen3.5 vision encoder's forward (Hugging Face transformers' Qwen3_5VisionModel, its
# pooler_output) in numpy float64, written for the tests from HF's semantics and sharing nothing with
# runtime/vision/: the Conv3d as a contraction over the 5-D patch, the position table resampled as
# F.interpolate(bilinear, align_corners=True) does (two interpolation matrices over the raster grid,
# then permuted into merge-block order), rotary as HF's cat(freqs, freqs) with rotate_half, one
# masked attention over all frames (a patch sees only its own frame), the merger's view(-1, 4h).
#   python3 qwen35_vision_reference.py WEIGHTS.safetensors CONFIG.json PATCHES.f32 T H W OUT.f64
# WEIGHTS: F32 tensors under model.visual.* (or visual.*); parsed here with struct/json/numpy.
# CONFIG: the vision_config keys (depth, hidden_size, num_heads, intermediate_size, hidden_act,
#   in_channels, patch_size, temporal_patch_size, spatial_merge_size, out_hidden_size,
#   num_position_embeddings; optional rope_theta, default 10000).
# PATCHES: T*H*W rows of in_channels*temporal_patch_size*patch_size^2 little-endian float32, the
#   processor's layout (rows in merge-block order, values in (C, T, y, x) order).
# OUT: T*H*W/merge^2 rows of out_hidden_size little-endian float64, row-major.
import json
import math
import struct
import sys

import numpy as np


def read_safetensors(path):
    raw = open(path, 'rb').read()
    (n,) = struct.unpack('<Q', raw[:8])
    header = json.loads(raw[8:8 + n].decode('utf-8'))
    base = 8 + n
    tensors = {}
    for name, entry in header.items():
        if name == '__metadata__':
            continue
        if entry['dtype'] != 'F32':
            raise SystemExit('tensor %s: dtype %s, only F32 is read' % (name, entry['dtype']))
        begin, end = entry['data_offsets']
        values = np.frombuffer(raw[base + begin:base + end], dtype='<f4')
        tensors[name] = values.astype(np.float64).reshape(entry['shape'])
    return tensors


def layer_norm(x, weight, bias, eps=1e-6):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def linear(x, weight, bias):
    return x @ weight.T + bias


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_erf(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def interpolation_matrix(out_len, in_len):
    """Rows of F.interpolate(align_corners=True) weights: out_len x in_len."""
    m = np.zeros((out_len, in_len))
    for i in range(out_len):
        src = i * (in_len - 1) / (out_len - 1) if out_len > 1 else 0.0
        lo = int(math.floor(src))
        hi = min(lo + 1, in_len - 1)
        frac = src - lo
        m[i, lo] += 1.0 - frac
        m[i, hi] += frac
    return m


def to_merge_order(grid, merge):
    """[H, W, ...] raster -> [H*W, ...] in (block_row, block_col, in_row, in_col) order."""
    h, w = grid.shape[:2]
    rest = grid.shape[2:]
    g = grid.reshape((h // merge, merge, w // merge, merge) + rest)
    g = g.transpose((0, 2, 1, 3) + tuple(range(4, 4 + len(rest))))
    return g.reshape((h * w,) + rest)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def main():
    weights_path, config_path, patches_path = sys.argv[1], sys.argv[2], sys.argv[3]
    grid_t, grid_h, grid_w = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    out_path = sys.argv[7]
    cfg = json.load(open(config_path))
    tensors = read_safetensors(weights_path)
    prefix = 'model.visual.' if any(k.startswith('model.visual.') for k in tensors) else 'visual.'
    W = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}

    hidden, heads = cfg['hidden_size'], cfg['num_heads']
    head_dim = hidden // heads
    merge = cfg['spatial_merge_size']
    channels, temporal, patch = cfg['in_channels'], cfg['temporal_patch_size'], cfg['patch_size']
    theta = cfg.get('rope_theta', 10000.0)
    act = gelu_tanh if cfg['hidden_act'] in ('gelu_pytorch_tanh', 'gelu_new', 'gelu_fast') else gelu_erf
    per_frame = grid_h * grid_w
    n = grid_t * per_frame

    pixels = np.fromfile(patches_path, dtype='<f4').astype(np.float64)
    pixels = pixels.reshape(n, channels, temporal, patch, patch)

    # Conv3d with kernel = stride = the patch: one contraction per patch.
    x = np.einsum('nctyx,hctyx->nh', pixels, W['patch_embed.proj.weight']) + W['patch_embed.proj.bias']

    # The learned side x side table resampled to the frame, raster, then in merge-block order.
    side = int(round(math.sqrt(cfg['num_position_embeddings'])))
    table = W['pos_embed.weight'].reshape(side, side, hidden)
    resampled = np.einsum('rs,sth,ct->rch', interpolation_matrix(grid_h, side), table,
                          interpolation_matrix(grid_w, side))
    x = x + np.tile(to_merge_order(resampled, merge), (grid_t, 1))

    # Rotary: (row, col) of each patch in merge-block order, the same for every frame.
    rows, cols = np.meshgrid(np.arange(grid_h), np.arange(grid_w), indexing='ij')
    coords = to_merge_order(np.stack([rows, cols], axis=-1), merge)
    coords = np.tile(coords, (grid_t, 1)).astype(np.float64)
    dim = head_dim // 2
    inv_freq = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    freqs = np.concatenate([np.outer(coords[:, 0], inv_freq), np.outer(coords[:, 1], inv_freq)], axis=1)
    emb = np.concatenate([freqs, freqs], axis=1)  # [n, head_dim]
    cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]

    frame = np.arange(n) // per_frame
    blocked = frame[:, None] != frame[None, :]

    for i in range(cfg['depth']):
        p = 'blocks.%d.' % i
        h = layer_norm(x, W[p + 'norm1.weight'], W[p + 'norm1.bias'])
        qkv = linear(h, W[p + 'attn.qkv.weight'], W[p + 'attn.qkv.bias']).reshape(n, 3, heads, head_dim)
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = np.einsum('qhd,khd->hqk', q, k) / math.sqrt(head_dim)
        scores = np.where(blocked[None], -np.inf, scores)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        attended = np.einsum('hqk,khd->qhd', probs, v).reshape(n, hidden)
        x = x + linear(attended, W[p + 'attn.proj.weight'], W[p + 'attn.proj.bias'])
        h = layer_norm(x, W[p + 'norm2.weight'], W[p + 'norm2.bias'])
        h = act(linear(h, W[p + 'mlp.linear_fc1.weight'], W[p + 'mlp.linear_fc1.bias']))
        x = x + linear(h, W[p + 'mlp.linear_fc2.weight'], W[p + 'mlp.linear_fc2.bias'])

    h = layer_norm(x, W['merger.norm.weight'], W['merger.norm.bias']).reshape(-1, merge * merge * hidden)
    h = gelu_erf(linear(h, W['merger.linear_fc1.weight'], W['merger.linear_fc1.bias']))
    out = linear(h, W['merger.linear_fc2.weight'], W['merger.linear_fc2.bias'])
    out.astype('<f8').tofile(out_path)


if __name__ == '__main__':
    main()
