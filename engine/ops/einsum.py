"""Einstein summation: the ``einsum`` op, and ``einsum``, ``einsum_path`` and
``tensordot`` built on it.

One registry entry, ``einsum``, holds an explicit subscripts string (every dim
named, no ``...``, no implicit output: see :mod:`.einsum_parse`). Its kernel
contracts two operands as one batched matrix product (transpose, reshape,
``matmul``: BLAS, not numpy's summation loops) and its VJP is again an einsum,
so gradients of any order trace. The public :func:`einsum` canonicalizes the
subscripts and, for three or more operands, picks the contraction order once
from the shapes (greedy, as ``np.einsum_path``) and emits one pairwise einsum
per step, so a graph holds the chosen order and each step's gradient.
"""
import math

import numpy as np

from .. import dtypes
from ..cost_model import cost
from ..errors import DTypeError, ShapeError, describe_inputs
from ..lifting import TensorLike
from ..modes import apply, current_mode
from ..numerics import c_ordered as _c_ordered
from ..op import Op, declare, register
from ._args import at_user_line
from . import _rules, creation, shape_ops
from .einsum_parse import (LETTERS, canonical, greedy_path, label_sizes, pair_result,
                           parse_explicit, sublists_to_string)


# ---- kernels, written once against an array namespace ``xp`` ----------------------------
def _reduce_term(xp, x, word, keep):
    """Take the diagonal of labels repeated in ``word`` and sum labels not in ``keep``."""
    while len(set(word)) < len(word):
        c = next(c for c in word if word.count(c) > 1)
        p = word.index(c)
        q = word.index(c, p + 1)
        rest = [i for i in range(len(word)) if i not in (p, q)]
        x = xp.linalg.diagonal(xp.permute_dims(x, tuple(rest) + (p, q)))
        word = "".join(word[i] for i in rest) + c
    axes = tuple(i for i, c in enumerate(word) if c not in keep)
    if axes:
        x = xp.sum(x, axis=axes, dtype=x.dtype)
        word = "".join(c for c in word if c in keep)
    return x, word


def _permuted(xp, x, word, order):
    if word == order:
        return x
    return xp.permute_dims(x, tuple(word.index(c) for c in order))


def _pair(xp, x, xw, y, yw, out, reduce_term=_reduce_term):
    """Contract two terms into the labels ``out`` by one batched matrix product."""
    x, xw = reduce_term(xp, x, xw, set(yw) | set(out))
    y, yw = reduce_term(xp, y, yw, set(xw) | set(out))
    batch = [c for c in xw if c in yw and c in out]
    summed = [c for c in xw if c in yw and c not in out]
    left = [c for c in xw if c not in yw]
    right = [c for c in yw if c not in xw]
    sx, sy = dict(zip(xw, x.shape)), dict(zip(yw, y.shape))
    size = lambda cs, s: math.prod(s[c] for c in cs)  # noqa: E731
    xm = xp.reshape(_permuted(xp, x, xw, "".join(batch + left + summed)),
                    (size(batch, sx), size(left, sx), size(summed, sx)))
    ym = xp.reshape(_permuted(xp, y, yw, "".join(batch + summed + right)),
                    (size(batch, sy), size(summed, sy), size(right, sy)))
    z = xp.reshape(xp.matmul(xm, ym), tuple([sx[c] for c in batch + left] +
                                            [sy[c] for c in right]))
    return _permuted(xp, z, "".join(batch + left + right), out)


def _contract_all(xp, arrays, words, out, reduce_term=_reduce_term):
    """All terms, left to right, pair by pair (the order was chosen by the caller)."""
    if len(arrays) == 1:
        x, w = reduce_term(xp, arrays[0], words[0], set(out))
        return _permuted(xp, x, w, out)
    x, xw = arrays[0], words[0]
    for k in range(1, len(arrays)):
        rest = words[k + 1:]
        target = out if not rest else pair_result(xw, words[k], rest, out)
        x = _pair(xp, x, xw, arrays[k], words[k], target, reduce_term)
        xw = target
    return x


def _np_reduce_term(xp, x, word, keep):
    # numpy does diagonals and sums of one operand in one einsum call.
    kept = "".join(dict.fromkeys(c for c in word if c in keep))
    if kept == word:
        return x, word
    return np.einsum(f"{word}->{kept}", x), kept


def _work(arrays, words):
    sizes: dict[str, int] = {}
    for a, w in zip(arrays, words):
        sizes.update(zip(w, a.shape))
    return math.prod(sizes.values())


def _einsum_impl(*arrays, subscripts):
    arrays = tuple(_c_ordered(a) for a in arrays)     # (bitwise: the order a graph holds)
    words, out = parse_explicit(subscripts)
    if (len(arrays) == 2 and set(words[0]) & set(words[1]) - set(out)
            and _work(arrays, words) >= cost.einsum_blas_min_work):
        # A contraction: one BLAS product instead of numpy's summation loops (186 vs
        # 692 us for 64x64 @ 64x64 on a loaded machine); small ones stay with
        # np.einsum, whose one call beats the transposes and reshapes (below
        # cost.einsum_blas_min_work multiply-adds).
        x, y = arrays
        if x.dtype != y.dtype:
            dt = np.result_type(x, y)
            x, y = x.astype(dt, copy=False), y.astype(dt, copy=False)
        return _pair(np, x, words[0], y, words[1], out, _np_reduce_term)
    return np.einsum(subscripts, *arrays)


def _einsum_generic(be, *arrays, subscripts):
    words, out = parse_explicit(subscripts)
    arrays = be.promote(*arrays)
    if be.dtype_of(arrays[0]) == dtypes.bool_:
        # numpy's bool einsum is an OR of ANDs; the standard sums and multiplies numbers
        # only, so count in int64 and test for nonzero.
        z = _contract_all(be.xp, [be.astype(a, np.dtype("int64")) for a in arrays], words, out)
        return be.astype(z, dtypes.bool_)
    return _contract_all(be.xp, arrays, words, out)


# numpy's einsum takes bools too (an OR of ANDs; mixed with numbers, promoted).
_EINSUM_DTYPES = dtypes.NUMERIC | {dtypes.bool_}


# ---- shape rule and gradient --------------------------------------------------------------
def _einsum_eval(*avals, subscripts):
    words, out = parse_explicit(subscripts)
    for _, dt in avals:
        if dt not in _EINSUM_DTYPES:
            raise DTypeError(f"einsum: expected numeric or bool inputs, got "
                             f"{describe_inputs(avals)}")
    if len(words) != len(avals) or any(len(w) != len(a[0]) for w, a in zip(words, avals)):
        raise ShapeError(f"einsum: subscripts {subscripts!r} do not fit inputs "
                         f"{describe_inputs(avals)}")
    sizes: dict[str, int | None] = {}   # None: not known yet
    for w, (shape, _) in zip(words, avals):
        for c, d in zip(w, shape):
            if d is not None and sizes.get(c) not in (None, d):
                raise ShapeError(f"einsum: label {c!r} of {subscripts!r} has sizes "
                                 f"{sizes[c]} and {d}; inputs {describe_inputs(avals)}")
            if sizes.get(c) is None:
                sizes[c] = d
    return (tuple(sizes[c] for c in out), np.result_type(*[dt for _, dt in avals]))


def _grad_of_term(g, out, xs, words, k):
    """The cotangent of operand ``k``: an einsum of ``g`` with the other operands. A
    label repeated in term ``k`` (a diagonal) is spread back by an identity matrix;
    a label only term ``k`` has (summed away) is broadcast back."""
    target, x = words[k], xs[k]
    used = set("".join(words) + out)
    fresh = iter(c for c in LETTERS if c not in used)
    others = [(xs[j], words[j]) for j in range(len(xs)) if j != k] + [(g, out)]
    named, seen = [], set()
    for pos, c in enumerate(target):
        if c in seen:                      # a repeat: its own label, tied by an identity
            f = next(fresh)
            others.append((creation.eye(x.shape[pos], dtype=g.dtype), c + f))
            named.append(f)
        else:
            named.append(c)
            seen.add(c)
    available = set("".join(w for _, w in others))
    present = "".join(c for c in named if c in available)
    gk = contract([t for t, _ in others], tuple(w for _, w in others), present)
    missing = [i for i, c in enumerate(named) if c not in available]
    if missing:
        gk = shape_ops.reshape(gk, tuple(1 if i in missing else -1 if d is None else d
                                         for i, d in enumerate(x.shape)))
        gk = shape_ops.broadcast_to_shape_of(gk, x)
    if gk.dtype != x.dtype:
        gk = creation.cast(gk, x.dtype)
    return gk


def _einsum_vjp(g, out, *xs, subscripts, needs=None):
    words, out_word = parse_explicit(subscripts)
    needs = needs or (True,) * len(xs)
    return tuple(_grad_of_term(g, out_word, xs, words, k) if need else None
                 for k, need in enumerate(needs))


einsum_op = register(Op("einsum", _einsum_impl, _einsum_eval, _einsum_vjp, vjp_needs=True,
                        generic=_einsum_generic, dtypes=_EINSUM_DTYPES,
                        doc="Einstein summation over explicit subscripts (every dim labelled)."))
declare(einsum_op, onnx=("Einsum",), fold_cost="einsum")


# ---- public functions -----------------------------------------------------------------------
def contract(operands, words, out, optimize=True):
    """Contract tensors labelled ``words`` into ``out`` (explicit labels), pairwise in
    the order ``optimize`` picks: greedy (True), as given (a path list), or all at
    once in one einsum op (False)."""
    if len(operands) <= 2 or optimize is False:
        return apply(einsum_op, *operands, subscripts=",".join(words) + "->" + out)
    if optimize is True or optimize == "greedy":
        sizes = label_sizes(words, [t.shape for t in operands])
        path = greedy_path(words, out, sizes)
    else:
        path = [tuple(p) for p in optimize if p != "einsum_path"]
    terms, words = list(operands), list(words)
    for step, pair in enumerate(path):
        i, j = sorted(pair)
        a, b = terms.pop(j), terms.pop(i)
        wa, wb = words.pop(j), words.pop(i)
        last = step == len(path) - 1
        r = out if last else pair_result(wb, wa, words, out)
        terms.append(apply(einsum_op, b, a, subscripts=f"{wb},{wa}->{r}"))
        words.append(r)
    return terms[0]


def _lifted(operands):
    if all(isinstance(t, TensorLike) for t in operands):
        return list(operands)
    return current_mode().lift(list(operands))


def _check_optimize(optimize):
    if optimize in (True, False, "greedy"):
        return optimize
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        return optimize
    raise ShapeError(f"einsum: optimize={optimize!r}; expected True, False, 'greedy' or a "
                     f"path ['einsum_path', (i, j), ...]{at_user_line()}")


def _canonical(name, subscripts, operands):
    if not isinstance(subscripts, str):
        subscripts, operands = sublists_to_string((subscripts,) + tuple(operands))
    if not operands:
        raise ShapeError(f"{name}: no operands{at_user_line()}")
    xs = _lifted(operands)
    try:
        words, out = canonical(subscripts, tuple(tuple(x.shape) for x in xs))
    except ShapeError as err:
        raise ShapeError(f"{err}{at_user_line()}") from None
    return xs, words, out


def einsum(subscripts, *operands, optimize=True):
    """Einstein summation with numpy's subscripts (implicit output, ``...``,
    broadcasting, the sublist form). Three or more operands are contracted pair
    by pair in a greedy order chosen once from the shapes (``optimize=False``:
    one op; a path from :func:`einsum_path` is used as given).

    Example:
        >>> import engine as en
        >>> a, b = en.ones((2, 3)), en.ones((3, 4))
        >>> en.einsum("ij,jk->ik", a, b).shape
        (2, 4)
        >>> float(en.einsum("ii", en.eye(3)))
        3.0
    """
    optimize = _check_optimize(optimize)
    xs, words, out = _canonical("einsum", subscripts, operands)
    return contract(xs, words, out, optimize)


def einsum_path(subscripts, *operands, optimize="greedy"):
    """The contraction order :func:`einsum` takes: ``(["einsum_path", (i, j), ...], text)``
    as ``np.einsum_path`` gives it (each pair's result goes to the end of the list).

    Example:
        >>> import engine as en
        >>> path, _ = en.einsum_path("ij,jk,kl->il", en.ones((2, 9)), en.ones((9, 9)),
        ...                          en.ones((9, 2)))
        >>> path
        ['einsum_path', (0, 1), (0, 1)]
    """
    _check_optimize(optimize)
    xs, words, out = _canonical("einsum_path", subscripts, operands)
    if len(xs) == 1:
        path = [(0,)]
    else:
        path = greedy_path(words, out, label_sizes(words, [t.shape for t in xs]))
    text = (f"  Complete contraction:  {','.join(words)}->{out}\n"
            + "\n".join(f"  step {n}: contract terms {p}" for n, p in enumerate(path)))
    return ["einsum_path"] + path, text


def _axes_list(name, axes, ndim):
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ShapeError(f"{name}: axis {a} is out of range for {ndim} dims{at_user_line()}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"{name}: repeated axis in {axes}{at_user_line()}")
    return out


def tensordot(a, b, axes=2):
    """Sum products over the last ``axes`` dims of ``a`` and the first of ``b``, or over
    the pairs ``axes = (axes_of_a, axes_of_b)`` (numpy's ``tensordot``).

    Example:
        >>> import engine as en
        >>> en.tensordot(en.ones((2, 3, 4)), en.ones((3, 4, 5))).shape
        (2, 5)
        >>> en.tensordot(en.ones((2, 3)), en.ones((2, 4)), axes=([0], [0])).shape
        (3, 4)
    """
    a, b = _lifted([a, b])
    na, nb = a.ndim, b.ndim
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(na, nb):
            raise ShapeError(f"tensordot: axes={n} does not fit inputs of {na} and {nb} dims"
                             f"{at_user_line()}")
        ax_a, ax_b = list(range(na - n, na)), list(range(n))
    else:
        try:
            spec_a, spec_b = axes
        except (TypeError, ValueError):
            raise ShapeError(f"tensordot: axes must be an int or a pair of axis lists, got "
                             f"{axes!r}{at_user_line()}") from None
        ax_a, ax_b = _axes_list("tensordot", spec_a, na), _axes_list("tensordot", spec_b, nb)
        if len(ax_a) != len(ax_b):
            raise ShapeError(f"tensordot: {len(ax_a)} axes of a against {len(ax_b)} of b"
                             f"{at_user_line()}")
    for i, j in zip(ax_a, ax_b):
        if None not in (a.shape[i], b.shape[j]) and a.shape[i] != b.shape[j]:
            raise ShapeError(f"tensordot: shape mismatch, axis {i} of {a.dtype}{list(a.shape)} "
                             f"has {a.shape[i]} elements, axis {j} of {b.dtype}{list(b.shape)} "
                             f"has {b.shape[j]}{at_user_line()}")
    if na + nb - len(ax_a) > len(LETTERS):
        raise ShapeError(f"tensordot: more than {len(LETTERS)} dims{at_user_line()}")
    wa = LETTERS[:na]
    paired: list[str | None] = [None] * nb   # b's labels: a's where contracted
    for i, j in zip(ax_a, ax_b):
        paired[j] = wa[i]
    spare = iter(LETTERS[na:])
    wb = "".join(c if c is not None else next(spare) for c in paired)
    out = "".join(c for i, c in enumerate(wa) if i not in ax_a) + \
        "".join(c for j, c in enumerate(wb) if j not in ax_b)
    return contract([a, b], (wa, wb), out)


__all__ = ["einsum", "einsum_path", "tensordot", "einsum_op"]


# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
def _einsum_jvp(primals, tangents, out, *, subscripts):
    # Linear in each operand: one einsum per operand that has a tangent.
    total = None
    for i, t in enumerate(tangents):
        if t is not None:
            xs = list(primals)
            xs[i] = t
            term = apply(einsum_op, *xs, subscripts=subscripts)
            total = term if total is None else total + term
    return total


def _einsum_batch(size, args, dims, *, subscripts):
    # The batch axis is one more label, first in every batched operand and in the result.
    words, out = parse_explicit(subscripts)
    label = next((c for c in LETTERS if c not in subscripts), None)
    if label is None:
        return NotImplemented
    xs, new_words = [], []
    for x, d, w in zip(args, dims, words):
        if d is None:
            xs.append(x)
            new_words.append(w)
        else:
            xs.append(_rules.move_to_front(x, d))
            new_words.append(label + w)
    return apply(einsum_op, *xs, subscripts=",".join(new_words) + "->" + label + out), 0


declare(einsum_op, jvp=_einsum_jvp, batch=_einsum_batch)
