"""``scaled_dot_product_attention``: PyTorch's function, in blocks of query rows.

``softmax(q @ k^T * scale + mask) @ v`` as
``torch.nn.functional.scaled_dot_product_attention``: the same arguments, masks and
results. A composite of engine ops, so it differentiates (to any order), traces into
``en.function`` and batches under ``en.vmap``. ``en.nn.MultiheadAttention``
(:mod:`engine.nn.attention`) runs on it.

Memory of the attention matrix. The scores ``q @ k^T`` of shape
``(..., L, S)`` are the one large intermediate. The queries are processed in
blocks of rows sized so that one block's scores hold at most
``en.config.cost.attention_block_elements`` entries (4 Mi); each block is
masked, normalized and multiplied by ``v`` before the next is formed, so the
full ``(..., L, S)``
matrix never exists in the forward pass unless it fits in one block (or the
weights are asked for, as ``MultiheadAttention(need_weights=True)`` does).
With ``is_causal`` a block of rows ``[i0, i1)`` reads only the keys ``[0,
i1)``: the masked upper triangle is never computed (about half the work).
The scale multiplies ``q`` (``L*E`` products) rather than the scores
(``L*S``), and masked scores take ``-inf`` from a broadcast scalar, not a
full array. Under a tape the softmax of each block is kept for the backward
pass, as in PyTorch's math kernel, so training holds the matrix once.
Traced, an optimization barrier makes each block wait for the previous one's
output, so the graph runs the blocks in turn and its memory plan reuses one
block's buffers for the next. Measured (float32, batch 2, 4 heads, L = S =
2048, E = 64): eagerly (recycled buffers off) one block peaks at 388 MiB
above the inputs (three 128 MiB score-sized arrays alive at once), the
blocks at 70 MiB, causal or not; traced, the memory plan holds 132 MiB for
one block, 23.5 MiB for the blocks.

Example:
    >>> import engine as en
    >>> q = en.random.normal((2, 4, 5, 8), seed=0)          # (batch, heads, L, E)
    >>> en.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    (2, 4, 5, 8)
"""
import math

from .. import dtypes, ops
from ..cost_model import cost
from ..errors import (DTypeError, InvalidArgumentError, ShapeError, describe_aval,
                      format_location, user_frame)
from ..random import default_generator
from ..tensor import Tensor, tensor
from ..variable import Variable



def _fail(cls, who, message, **tensors):
    """``cls`` naming the op, the tensors' shapes and dtypes and the user's line."""
    shown = ", ".join(f"{name} {describe_aval((tuple(t.shape), t.dtype))}"
                      for name, t in tensors.items())
    return cls(f"{who}: {message}" + (f", got {shown}" if shown else "")
               + f"\n  at {format_location(user_frame())}")


def _as_tensor(x):
    return x if isinstance(x, (Tensor, Variable)) else tensor(x)


def _known(*dims):
    return all(d is not None for d in dims)


def _broadcastable(a, b):
    """Whether two shapes broadcast (unknown dimensions broadcast with anything)."""
    for x, y in zip(reversed(a), reversed(b)):
        if _known(x, y) and x != y and 1 not in (x, y):
            return False
    return True


def _check(who, q, k, v, mask, dropout_p, is_causal, scale):
    """Every argument checked before any work, each failure naming the tensors involved."""
    if not (isinstance(dropout_p, (int, float)) and not isinstance(dropout_p, bool)
            and 0.0 <= dropout_p < 1.0):
        raise InvalidArgumentError(f"{who}: dropout_p must be in [0, 1), got {dropout_p!r}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        raise InvalidArgumentError(f"{who}: scale must be a number or None, got {scale!r}")
    if q.dtype not in dtypes.FLOATS or q.dtype != k.dtype or q.dtype != v.dtype:
        raise _fail(DTypeError, who, "query, key and value must share one floating-point "
                    "dtype", query=q, key=k, value=v)
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise _fail(ShapeError, who, "query, key and value need at least 2 dimensions "
                    "(..., length, features)", query=q, key=k, value=v)
    if _known(q.shape[-1], k.shape[-1]) and q.shape[-1] != k.shape[-1]:
        raise _fail(ShapeError, who, "query and key must have the same last dimension",
                    query=q, key=k)
    if _known(k.shape[-2], v.shape[-2]) and k.shape[-2] != v.shape[-2]:
        raise _fail(ShapeError, who, "key and value must have the same length (axis -2)",
                    key=k, value=v)
    if not (_broadcastable(q.shape[:-2], k.shape[:-2]) and
            _broadcastable(q.shape[:-2], v.shape[:-2])):
        raise _fail(ShapeError, who, "the batch dimensions (all but the last two) of query, "
                    "key and value must broadcast", query=q, key=k, value=v)
    if mask is not None:
        if mask.dtype != dtypes.bool_ and mask.dtype not in dtypes.FLOATS:
            raise _fail(DTypeError, who, "attn_mask must be bool (True: attend) or floating "
                        "(added to the scores)", attn_mask=mask)
        scores = tuple(q.shape[:-1]) + (k.shape[-2],)
        if mask.ndim > len(scores) or not _broadcastable(mask.shape, scores):
            raise _fail(ShapeError, who, "attn_mask must broadcast to the scores "
                        f"(..., L, S) = {_dims(scores)}", attn_mask=mask, query=q, key=k)


def _dims(shape):
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def _rows_per_block(q, k):
    """How many query rows one block takes (all of them when the sizes are unknown)."""
    length, keys = q.shape[-2], k.shape[-2]
    batch = [d for d in tuple(q.shape[:-2]) + tuple(k.shape[:-2])]
    if not _known(length, keys, *batch) or length == 0:
        return length
    per_row = max(1, keys * math.prod(max(a, b) for a, b in _pairs(q.shape[:-2], k.shape[:-2])))
    return max(1, min(length, cost.attention_block_elements // per_row))


def _pairs(a, b):
    """The batch dimensions of two shapes, right-aligned (1 where one is shorter)."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return zip(a, b)


def _safe_softmax(scores):
    """Softmax over the last axis; a row whose every score is ``-inf`` (fully masked) gives
    zeros, as PyTorch's attention does, instead of NaN."""
    top = ops.max(scores, axis=-1, keepdims=True)
    # The shift changes nothing mathematically: no gradient through it.
    top = ops.stop_gradient(ops.where(ops.isneginf(top), ops.zeros_like(top), top))
    e = ops.exp(ops.sub(scores, top))
    total = ops.sum(e, axis=-1, keepdims=True)
    return ops.div(e, ops.where(ops.equal(total, 0), ops.ones_like(total), total))


def _rows(mask, start, stop, keys_end, length, keys):
    """The part of a broadcastable mask for query rows ``[start, stop)`` and keys
    ``[0, keys_end)``."""
    if mask is None:
        return None
    rows = slice(start, stop) if mask.ndim >= 2 and mask.shape[-2] == length else slice(None)
    cols = slice(0, keys_end) if mask.shape[-1] == keys else slice(None)
    if rows == slice(None) and cols == slice(None):
        return mask
    return ops.getitem(mask, (Ellipsis, rows, cols))


def _dropout(weights, p, generator):
    """``F.dropout``'s rule and draws (``en.nn.functional`` imports this module, so this one
    cannot import it): zero with probability ``p``, scale the rest by ``1 / (1 - p)``."""
    generator = default_generator() if generator is None else generator
    keep = ops.greater_equal(generator.uniform_like(weights, dtype=weights.dtype), p)
    return ops.mul(ops.where(keep, weights, ops.zeros_like(weights)), 1.0 / (1.0 - p))


def _minus_inf(like):
    """``-inf`` as a scalar of ``like``'s dtype: broadcast by ``where``, never a full array."""
    return tensor(-math.inf, dtype=like.dtype)


def _block(q, k, v, mask, causal_from, dropout_p, generator):
    """Attention of one block of (already scaled) query rows: ``(output, weights)``.

    ``causal_from`` is the index of the block's first row when the causal mask applies."""
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
    if causal_from is not None:
        rows, keys = scores.shape[-2], scores.shape[-1]
        keep = ops.tril(ops.ones((rows, keys), dtype=dtypes.bool_), k=causal_from)
        scores = ops.where(keep, scores, _minus_inf(scores))
    if mask is not None and mask.dtype == dtypes.bool_:
        scores = ops.where(mask, scores, _minus_inf(scores))
    elif mask is not None:
        scores = ops.add(scores, mask)
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, generator)
    return ops.matmul(weights, v), weights


def attend(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
           generator=None, need_weights=False, who="scaled_dot_product_attention"):
    """:func:`scaled_dot_product_attention` returning ``(output, weights)``; the weights
    (after dropout) only when ``need_weights`` (then in one block), else None. Here a mask
    and ``is_causal`` may come together (MultiheadAttention's padding mask and causal)."""
    q, k, v = _as_tensor(query), _as_tensor(key), _as_tensor(value)
    mask = None if attn_mask is None else _as_tensor(attn_mask)
    _check(who, q, k, v, mask, dropout_p, is_causal, scale)
    if mask is not None and mask.dtype != dtypes.bool_ and mask.dtype != q.dtype:
        mask = ops.cast(mask, q.dtype)
    features = q.shape[-1]
    if scale is None:
        if features is None:
            raise _fail(ShapeError, who, "the default scale 1/sqrt(E) needs a known last "
                        "dimension (or give scale=)", query=q)
        scale = 1.0 / math.sqrt(features) if features else 1.0
    q = ops.mul(q, float(scale))
    length, keys = q.shape[-2], k.shape[-2]
    step = length if need_weights else _rows_per_block(q, k)
    if step is None or step == length:
        # One block: the whole score matrix (small, sizes unknown, or weights wanted).
        if is_causal and not _known(length, keys):
            raise _fail(ShapeError, who, "is_causal needs known lengths", query=q, key=k)
        out, weights = _block(q, k, v, mask, 0 if is_causal else None, dropout_p, generator)
        return out, (weights if need_weights else None)
    pieces: list[Tensor] = []
    for start in range(0, length, step):
        stop = min(length, start + step)
        # Causal rows [start, stop) see only the keys [0, stop): the rest is never formed.
        end = min(keys, stop) if is_causal else keys
        q_rows = ops.getitem(q, (Ellipsis, slice(start, stop), slice(None)))
        if pieces:
            # A traced graph runs the blocks one after another (not all scores first), so
            # the memory plan reuses one block's buffers for the next.
            q_rows = ops.optimization_barrier(q_rows, pieces[-1])
        k_cols = k if end == keys else ops.getitem(k, (Ellipsis, slice(0, end), slice(None)))
        v_cols = v if end == keys else ops.getitem(v, (Ellipsis, slice(0, end), slice(None)))
        out, _ = _block(q_rows, k_cols, v_cols, _rows(mask, start, stop, end, length, keys),
                        start if is_causal else None, dropout_p, generator)
        pieces.append(out)
    return ops.concatenate(pieces, axis=-2), None


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, generator=None):
    """``softmax(query @ key^T * scale + mask) @ value`` (PyTorch's function).

    ``query`` is ``(..., L, E)``, ``key`` ``(..., S, E)``, ``value`` ``(..., S, Ev)``
    (leading dimensions broadcast); the result is ``(..., L, Ev)``. ``scale``
    defaults to ``1 / sqrt(E)``. ``attn_mask`` broadcasts to ``(..., L, S)``: a
    bool mask keeps the scores where True, a float mask is added to them.
    ``is_causal=True`` lets row ``i`` attend to keys ``j <= i`` (not with
    ``attn_mask``). A row with every key masked gives zeros. ``dropout_p``
    drops attention weights with the engine's random state (``generator``: an
    ``en.random.Generator``, None for the default stream); pass 0 in evaluation.
    Large problems run in blocks of query rows (see :mod:`engine.nn.sdpa`).

    Example:
        >>> import engine as en
        >>> q = en.tensor([[[1.0, 0.0], [0.0, 1.0]]])
        >>> out = en.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        >>> out.numpy().round(3).tolist()
        [[[1.0, 0.0], [0.33, 0.67]]]
    """
    if is_causal and attn_mask is not None:
        raise InvalidArgumentError("scaled_dot_product_attention: give attn_mask or "
                                   "is_causal=True, not both")
    return attend(query, key, value, attn_mask, dropout_p, is_causal, scale, generator)[0]
