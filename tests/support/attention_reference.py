"""Numpy references for attention and transformer layers, written from the papers' and
PyTorch's definitions, in float64, reading an engine module's weights (``(in, out)``).

Example:
    >>> import numpy as np
    >>> q = np.eye(2)[None]
    >>> np_sdpa(q, q, q, causal=True).round(3).tolist()
    [[[1.0, 0.0], [0.33, 0.67]]]
"""
import math

import numpy as np


def np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    """softmax(q k^T * scale + mask) v in float64; fully masked rows give zeros."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isinf(top), 0.0, top))
    total = e.sum(-1, keepdims=True)
    return (e / np.where(total == 0, 1.0, total)) @ v


def params_of(module, prefix=""):
    """``{local name: float64 array}`` of the variables under ``prefix``."""
    return {name[len(prefix):]: v.numpy().astype(np.float64)
            for name, v in module.named_variables() if name.startswith(prefix)}


def np_mha(q, k, v, p, heads, key_padding_mask=None, attn_mask=None, causal=False):
    """PyTorch's multi-head attention on (L, N, E) inputs (bool masks: True = masked out);
    returns (output, per-head weights)."""
    e = q.shape[-1]
    w = p["in_proj_weight"]
    b = p.get("in_proj_bias", np.zeros(3 * e))
    qp, kp, vp = q @ w[:, :e] + b[:e], k @ w[:, e:2 * e] + b[e:2 * e], v @ w[:, 2 * e:] + b[2 * e:]

    def split(x):                     # (L, N, E) -> (N, H, L, E/H)
        n_len, n = x.shape[:2]
        return x.reshape(n_len, n, heads, e // heads).transpose(1, 2, 0, 3)
    qh, kh, vh = split(qp), split(kp), split(vp)
    s = qh @ np.swapaxes(kh, -1, -2) / math.sqrt(e // heads)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if attn_mask is not None:
        s = s + (np.where(attn_mask, -np.inf, 0.0) if attn_mask.dtype == bool else attn_mask)
    if key_padding_mask is not None:
        s = s + np.where(key_padding_mask, -np.inf, 0.0)[:, None, None, :]
    wts = np.exp(s - s.max(-1, keepdims=True))
    wts /= wts.sum(-1, keepdims=True)
    o = (wts @ vh).transpose(2, 0, 1, 3).reshape(q.shape[0], q.shape[1], e)
    return o @ p["out_proj.weight"] + p.get("out_proj.bias", 0.0), wts


def np_layer_norm(x, p, name, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * p[f"{name}.weight"] + p.get(f"{name}.bias", 0.0)


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def np_feed_forward(x, p, activation="relu"):
    h = x @ p["linear1.weight"] + p.get("linear1.bias", 0.0)
    h = np.maximum(h, 0.0) if activation == "relu" else _gelu(h)
    return h @ p["linear2.weight"] + p.get("linear2.bias", 0.0)


def _sub(p, prefix):
    return {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}


def np_encoder_layer(x, p, heads, norm_first=False, activation="relu", padding=None,
                     causal=False):
    """PyTorch's TransformerEncoderLayer (no dropout) on (S, N, E)."""
    def sa(y):
        return np_mha(y, y, y, _sub(p, "self_attn."), heads, padding, causal=causal)[0]
    if norm_first:
        x = x + sa(np_layer_norm(x, p, "norm1"))
        return x + np_feed_forward(np_layer_norm(x, p, "norm2"), p, activation)
    x = np_layer_norm(x + sa(x), p, "norm1")
    return np_layer_norm(x + np_feed_forward(x, p, activation), p, "norm2")


def np_decoder_layer(x, memory, p, heads, norm_first=False, activation="relu", causal=False,
                     memory_padding=None):
    """PyTorch's TransformerDecoderLayer (no dropout) on (T, N, E) and memory (S, N, E)."""
    def sa(y):
        return np_mha(y, y, y, _sub(p, "self_attn."), heads, causal=causal)[0]

    def ca(y):
        return np_mha(y, memory, memory, _sub(p, "multihead_attn."), heads, memory_padding)[0]
    if norm_first:
        x = x + sa(np_layer_norm(x, p, "norm1"))
        x = x + ca(np_layer_norm(x, p, "norm2"))
        return x + np_feed_forward(np_layer_norm(x, p, "norm3"), p, activation)
    x = np_layer_norm(x + sa(x), p, "norm1")
    x = np_layer_norm(x + ca(x), p, "norm2")
    return np_layer_norm(x + np_feed_forward(x, p, activation), p, "norm3")
