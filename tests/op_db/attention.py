"""Op-database entry for the attention composite ``en.nn.functional.scaled_dot_product_attention``
(``engine/nn/sdpa.py``), against the textbook formula in float64 written here:
``softmax(q k^T * scale + mask) v``, a fully masked row giving zeros (PyTorch's rule).
The mask is a positional argument so that the suites hand it over as a tensor."""
import math

import numpy as np

import engine as en

from op_db.core import F64, FLOATS, ErrorInput, OpInfo, Sample, composite, make


def _np_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    dtype = q.dtype
    q, k, v = (np.asarray(a, F64) for a in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isinf(top), 0.0, top))
    total = e.sum(-1, keepdims=True)
    return ((e / np.where(total == 0, 1.0, total)) @ v).astype(dtype)


def _samples(dtype, rng):
    def qkv(sq, sk, ev):
        return (make(rng, sq, dtype), make(rng, sk, dtype), make(rng, sk[:-1] + (ev,), dtype))
    yield Sample(qkv((2, 3, 4), (2, 5, 4), 3))
    yield Sample(qkv((1, 2, 4, 3), (1, 2, 4, 3), 2), dict(is_causal=True), desc="causal")
    keep = rng.random((3, 5)) < 0.6
    keep[:, 0] = True
    yield Sample(qkv((2, 3, 4), (2, 5, 4), 2) + (keep,), desc="bool mask")
    yield Sample(qkv((2, 3, 4), (2, 5, 4), 2) + (make(rng, (2, 3, 5), dtype),), desc="float mask")
    yield Sample(qkv((3, 2), (4, 2), 5), dict(scale=0.5), desc="2-D, scale")
    yield Sample(qkv((2, 1, 3, 4), (1, 2, 5, 4), 3), desc="broadcast batch")
    masked_row = np.ones((3, 5), bool)
    masked_row[1] = False
    yield Sample(qkv((3, 4), (5, 4), 2) + (masked_row,), desc="a fully masked row")


def _errors():
    ones = np.ones
    return [ErrorInput(Sample((ones((3, 4)), ones((5, 2)), ones((5, 2)))), en.ShapeError),
            ErrorInput(Sample((ones((3, 4)), ones((5, 4)), ones((6, 2)))), en.ShapeError),
            ErrorInput(Sample((ones((3, 4)), ones((5, 4)), ones((5, 2)), ones((3, 4), bool))),
                       en.ShapeError),
            ErrorInput(Sample((ones((3, 4)), ones((5, 4)), ones((5, 2)), ones((3, 5), int))),
                       en.DTypeError),
            ErrorInput(Sample((ones((3, 4), np.float32), ones((5, 4)), ones((5, 2)))),
                       en.DTypeError),
            ErrorInput(Sample((ones((3, 4)), ones((5, 4)), ones((5, 2))), dict(dropout_p=1.5)),
                       en.InvalidArgumentError)]


composite(OpInfo("scaled_dot_product_attention", en.nn.functional.scaled_dot_product_attention,
                 _np_attention, _samples, FLOATS, error_inputs=_errors))
