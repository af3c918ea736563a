"""The :class:`MultiheadAttention` layer, PyTorch's, on :func:`scaled_dot_product_attention`.

The same arguments, masks, results and variable names as
``torch.nn.MultiheadAttention``; a composite of engine ops, so it differentiates,
traces into ``en.function`` and batches under ``en.vmap``. The attention itself runs
in blocks of query rows (:mod:`engine.nn.sdpa`) unless its weights are asked for.

Weights are laid out ``(in, out)`` as everywhere in ``en.nn``: PyTorch's 2-D
weights transposed (``in_proj_weight`` is ``(embed_dim, 3 * embed_dim)``);
``en.nn.load_torch_state_dict`` transposes them.

Example:
    >>> import engine as en
    >>> mha = en.nn.MultiheadAttention(16, 4, batch_first=True, generator=0)
    >>> x = en.ones((3, 7, 16), "float32")                 # (batch, L, E)
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    ((3, 7, 16), (3, 7, 7))
"""
import math

from .. import default_dtype, dtypes, ops
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..tensor import tensor
from ..variable import Variable
from . import functional as F
from . import init as initializers
from .layers import Linear, _generator, _positive_int, _seeded_from_default
from .module import Module
from .sdpa import _as_tensor, _dims, _fail, _known, attend


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
        if q.ndim == 3:
            batch_axis = 0 if self.batch_first else 1
            if not _known(q.shape[batch_axis]) and not _known(q.shape[seq], k.shape[seq]):
                raise _fail(ShapeError, who, "splitting the heads needs a known batch size or "
                            "known lengths (trace with one of them fixed)", query=q, key=k)

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")
