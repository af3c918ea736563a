"""Attention: :func:`scaled_dot_product_attention` and the :class:`MultiheadAttention` layer.

Both follow PyTorch (``torch.nn.functional.scaled_dot_product_attention``,
``torch.nn.MultiheadAttention``): the same arguments, the same masks, the same
results. They are composites of engine ops, so they differentiate (to any
order), trace into ``en.function`` and batch under ``en.vmap``.

Memory of the attention matrix. The scores ``q @ k^T`` of shape
``(..., L, S)`` are the one large intermediate. The queries are processed in
blocks of rows sized so that one block's scores hold at most
:data:`BLOCK_ELEMENTS` entries; each block is masked, normalized and
multiplied by ``v`` before the next is formed, so the full ``(..., L, S)``
matrix never exists in the forward pass unless it fits in one block (or the
weights are asked for, as ``MultiheadAttention(need_weights=True)`` does).
With ``is_causal`` a block of rows ``[i0, i1)`` reads only the keys ``[0,
i1)``: the masked upper triangle is never computed (about half the work).
The scale multiplies ``q`` (``L*E`` products) rather than the scores
(``L*S``), and masked scores take ``-inf`` from a broadcast scalar, not a
full array. Under a tape the softmax of each block is kept for the backward
pass, as in PyTorch's math kernel, so training holds the matrix once.
Measured eagerly (float32, batch 2, 4 heads, L = S = 2048, E = 64, recycled
buffers off): one block peaks at 388 MiB above the inputs (three 128 MiB
score-sized arrays alive at once), blocks at 70 MiB, causal or not.

Weights are laid out ``(in, out)`` as everywhere in ``en.nn``: PyTorch's 2-D
weights transposed (``in_proj_weight`` is ``(embed_dim, 3 * embed_dim)``).

Example:
    >>> import engine as en
    >>> q = en.random.normal((2, 4, 5, 8), seed=0)          # (batch, heads, L, E)
    >>> en.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    (2, 4, 5, 8)
    >>> mha = en.nn.MultiheadAttention(16, 4, batch_first=True, generator=0)
    >>> x = en.ones((3, 7, 16), "float32")                 # (batch, L, E)
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    ((3, 7, 16), (3, 7, 7))
"""
import math

from .. import default_dtype, dtypes, ops
from ..errors import (DTypeError, InvalidArgumentError, ShapeError, describe_aval,
                      format_location, user_frame)
from ..tensor import Tensor, tensor
from ..variable import Variable
from . import functional as F
from . import init as initializers
from .layers import Linear, _generator, _positive_int, _seeded_from_default
from .module import Module

# The most entries of the score matrix one block of query rows may hold (4 Mi: 32 MB in
# float64). Larger problems are cut into blocks of rows; tests lower it to force blocks.
BLOCK_ELEMENTS = 1 << 22


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
    return max(1, min(length, BLOCK_ELEMENTS // per_row))


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
        weights = F.dropout(weights, dropout_p, generator)
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
        return _block(q, k, v, mask, 0 if is_causal else None, dropout_p, generator) \
            if need_weights else (_block(q, k, v, mask, 0 if is_causal else None, dropout_p,
                                         generator)[0], None)
    pieces = []
    for start in range(0, length, step):
        stop = min(length, start + step)
        # Causal rows [start, stop) see only the keys [0, stop): the rest is never formed.
        end = min(keys, stop) if is_causal else keys
        q_rows = ops.getitem(q, (Ellipsis, slice(start, stop), slice(None)))
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
    Large problems run in blocks of query rows (see :mod:`engine.nn.attention`).

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


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al. 2017) with PyTorch's arguments and results.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)`` returns
    ``(output, weights)``; the inputs are ``(L, N, E)``, or ``(N, L, E)`` with
    ``batch_first=True``, or unbatched ``(L, E)``. As in PyTorch, a bool mask
    here is True where attention is NOT allowed (the opposite of
    :func:`scaled_dot_product_attention`) and a float mask is added.
    ``key_padding_mask`` is ``(N, S)``; ``attn_mask`` ``(L, S)`` or
    ``(N * num_heads, L, S)``. ``weights`` are ``(N, L, S)`` averaged over the
    heads, ``(N, num_heads, L, S)`` with ``average_attn_weights=False``, or None
    with ``need_weights=False`` (then the attention runs in blocks, never
    holding the whole matrix). ``is_causal=True`` without ``attn_mask`` applies
    the causal mask (PyTorch asks for the mask as well).

    Variables, named as PyTorch's state_dict keys: ``in_proj_weight``
    ``(E, 3E)`` (or ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight``
    when ``kdim``/``vdim`` differ from ``E``), ``in_proj_bias``,
    ``out_proj.weight`` ``(E, E)``, ``out_proj.bias``; 2-D weights are
    PyTorch's transposed. Initialized as PyTorch's: Xavier-uniform projections,
    zero biases. Dropout on the attention weights in training mode, from the
    layer's own seeded generator.

    Example:
        >>> import engine as en
        >>> mha = en.nn.MultiheadAttention(8, 2, generator=0)
        >>> x = en.ones((5, 3, 8), "float32")        # (L, N, E)
        >>> out, w = mha(x, x, x, need_weights=False)
        >>> out.shape, w is None
        ((5, 3, 8), True)
    """

    # PyTorch's projection weights are (out, in): en.nn.load_torch_state_dict transposes them.
    _torch_layout = {"in_proj_weight": (1, 0), "q_proj_weight": (1, 0),
                     "k_proj_weight": (1, 0), "v_proj_weight": (1, 0)}

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False,
                 kdim=None, vdim=None, dtype=None, generator=None, name="mha"):
        super().__init__()
        dtype = default_dtype.model_float(dtype)
        who = "MultiheadAttention"
        self.embed_dim = _positive_int(who, "embed_dim", embed_dim)
        self.num_heads = _positive_int(who, "num_heads", num_heads)
        if embed_dim % num_heads:
            raise InvalidArgumentError(f"{who}: embed_dim ({embed_dim}) must be divisible by "
                                       f"num_heads ({num_heads})")
        if not 0.0 <= dropout < 1.0:
            raise InvalidArgumentError(f"{who}: dropout must be in [0, 1), got {dropout}")
        self.kdim = embed_dim if kdim is None else _positive_int(who, "kdim", kdim)
        self.vdim = embed_dim if vdim is None else _positive_int(who, "vdim", vdim)
        self.dropout = float(dropout)
        self.batch_first = bool(batch_first)
        self.head_dim = embed_dim // num_heads
        gen = _generator(generator)
        e = embed_dim
        self.in_proj_weight: Variable | None = None
        if self.kdim == e and self.vdim == e:
            # Xavier on PyTorch's (3E, E) gives the bound sqrt(6 / 4E): the same on (E, 3E).
            self.in_proj_weight = Variable(initializers.glorot_uniform((e, 3 * e), dtype, gen),
                                           name=f"{name}/in_proj_weight")
        else:
            self.q_proj_weight = Variable(initializers.glorot_uniform((e, e), dtype, gen),
                                          name=f"{name}/q_proj_weight")
            self.k_proj_weight = Variable(initializers.glorot_uniform((self.kdim, e), dtype, gen),
                                          name=f"{name}/k_proj_weight")
            self.v_proj_weight = Variable(initializers.glorot_uniform((self.vdim, e), dtype, gen),
                                          name=f"{name}/v_proj_weight")
        self.in_proj_bias = (Variable(initializers.zeros((3 * e,), dtype),
                                      name=f"{name}/in_proj_bias") if bias else None)
        self.out_proj = Linear(e, e, bias=bias, init="lecun_uniform", dtype=dtype,
                               generator=gen, name=f"{name}/out_proj")
        # Private: the dropout's state variable is not a parameter.
        self._generator = gen if generator is not None else _seeded_from_default()

    # -- the projections ---------------------------------------------------------------------
    def _weights(self):
        """``(w_q, w_k, w_v)`` and ``(b_q, b_k, b_v)`` (None biases without bias)."""
        if self.in_proj_weight is not None:
            w = ops.split(self.in_proj_weight, 3, axis=1)
        else:
            w = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = ((None,) * 3 if self.in_proj_bias is None
             else ops.split(self.in_proj_bias, 3, axis=0))
        return w, b

    def _heads(self, x, batch, length):
        """``(N, L, E)`` -> ``(N, H, L, E / H)``."""
        shape = (-1 if batch is None else batch, -1 if batch is not None else length,
                 self.num_heads, self.head_dim)
        return ops.transpose(ops.reshape(x, shape), (0, 2, 1, 3))

    # -- the masks ---------------------------------------------------------------------------
    def _mask(self, attn_mask, key_padding_mask, q, batch, length, keys):
        """One additive float mask (0 or -inf, or the float masks' sum) broadcasting to
        ``(N, H, L, S)``, or None."""
        who = "MultiheadAttention"
        total = None
        if attn_mask is not None:
            m = _as_tensor(attn_mask)
            wanted = [(length, keys), (None if batch is None else batch * self.num_heads,
                                       length, keys)]
            if not any(m.ndim == len(w) and all(a is None or b is None or a == b
                                                for a, b in zip(m.shape, w)) for w in wanted):
                raise _fail(ShapeError, who, f"attn_mask must be (L, S) = {_dims(wanted[0])} "
                            f"or (N * num_heads, L, S) = {_dims(wanted[1])}", attn_mask=m)
            m = self._additive(m, q.dtype, "attn_mask")
            if m.ndim == 3:
                m = ops.reshape(m, (-1, self.num_heads, m.shape[-2], m.shape[-1]))
            total = m
        if key_padding_mask is not None:
            m = _as_tensor(key_padding_mask)
            if m.ndim != 2 or not all(a is None or b is None or a == b
                                      for a, b in zip(m.shape, (batch, keys))):
                raise _fail(ShapeError, who, f"key_padding_mask must be (N, S) = "
                            f"{_dims((batch, keys))}", key_padding_mask=m)
            m = ops.expand_dims(self._additive(m, q.dtype, "key_padding_mask"), (1, 2))
            total = m if total is None else ops.add(total, m)
        return total

    @staticmethod
    def _additive(mask, dtype, label):
        if mask.dtype == dtypes.bool_:       # True: not allowed
            return ops.where(mask, tensor(-math.inf, dtype=dtype), tensor(0.0, dtype=dtype))
        if mask.dtype in dtypes.FLOATS:
            return ops.cast(mask, dtype)
        raise _fail(DTypeError, "MultiheadAttention", f"{label} must be bool (True: masked "
                    "out) or floating (added to the scores)", **{label: mask})

    # -- calling ----------------------------------------------------------------------------
    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        q, k, v = _as_tensor(query), _as_tensor(key), _as_tensor(value)
        self._check_inputs(q, k, v)
        unbatched = q.ndim == 2
        if unbatched:
            q, k, v = (ops.expand_dims(t, 1) for t in (q, k, v))
            if key_padding_mask is not None:
                key_padding_mask = ops.expand_dims(_as_tensor(key_padding_mask), 0)
        elif self.batch_first:
            q, k, v = (ops.swapaxes(t, 0, 1) for t in (q, k, v))
        # From here on (L, N, E), PyTorch's own layout.
        length, batch, keys = q.shape[0], q.shape[1], k.shape[0]
        mask = self._mask(attn_mask, key_padding_mask, q, batch, length, keys)
        (wq, wk, wv), (bq, bk, bv) = self._weights()
        qp, kp, vp = (F.linear(ops.swapaxes(t, 0, 1), w, b)
                      for t, w, b in ((q, wq, bq), (k, wk, bk), (v, wv, bv)))
        qh, kh, vh = (self._heads(t, batch, n) for t, n in ((qp, length), (kp, keys), (vp, keys)))
        dropout_p = self.dropout if self.training else 0.0
        # is_causal is PyTorch's hint that attn_mask is causal: the mask is used then.
        causal = is_causal and attn_mask is None
        out, weights = attend(qh, kh, vh, mask, dropout_p, causal, None, self._generator,
                              need_weights, who="MultiheadAttention")
        out = ops.reshape(ops.transpose(out, (0, 2, 1, 3)),
                          (-1 if batch is None else batch, -1 if batch is not None else length,
                           self.embed_dim))
        out = self.out_proj(out)                          # (N, L, E)
        if unbatched:
            out = ops.getitem(out, 0)
        elif not self.batch_first:
            out = ops.swapaxes(out, 0, 1)
        if weights is not None:
            if average_attn_weights:
                weights = ops.mean(weights, axis=1)
            if unbatched:
                weights = ops.getitem(weights, 0)
        return out, weights

    def _check_inputs(self, q, k, v):
        who = "MultiheadAttention"
        if q.ndim not in (2, 3) or not q.ndim == k.ndim == v.ndim:
            raise _fail(ShapeError, who, "query, key and value must all be 3-D "
                        "(L, N, E) / (N, L, E) with batch_first, or all 2-D (L, E)",
                        query=q, key=k, value=v)
        for t, label, width in ((q, "query", self.embed_dim), (k, "key", self.kdim),
                                (v, "value", self.vdim)):
            if _known(t.shape[-1]) and t.shape[-1] != width:
                raise _fail(ShapeError, who, f"{label} must have {width} features (the last "
                            "dimension)", **{label: t})
        if q.ndim == 3:
            axis = 0 if self.batch_first else 1
            sizes = [t.shape[axis] for t in (q, k, v)]
            if _known(*sizes) and len(set(sizes)) != 1:
                raise _fail(ShapeError, who, "query, key and value must have the same batch "
                            "size", query=q, key=k, value=v)
        seq = 1 if self.batch_first and q.ndim == 3 else 0
        if _known(k.shape[seq], v.shape[seq]) and k.shape[seq] != v.shape[seq]:
            raise _fail(ShapeError, who, "key and value must have the same length",
                        key=k, value=v)

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")
