"""The discrete Fourier transforms: four registry ops, ``fft``, ``ifft``, ``rfft`` and
``irfft``, each over any set of axes (numpy's ``fftn`` family; the one-axis and
two-axis functions of :mod:`engine.fft` are the same ops over fewer axes, as one
primitive serves all of them in JAX).

An op's params are canonical: ``s`` (the transform length per axis, ``None`` for
the input's own length), ``axes`` (negative, so a batch axis put first by vmap
leaves them alone) and ``norm`` ("backward", "ortho" or "forward"). The numpy
kernel is ``numpy.fft``'s, the generic one the standard's ``fft`` extension.

Gradients use JAX's convention for complex values (see
:mod:`engine.ops.complex_parts`): the DFT matrix is symmetric, so the transpose
of ``fft`` is ``fft`` with the same norm, zero-padded or cut back to the input's
lengths; a real input takes the real part. ``rfft`` transposes to the real part
of an ``fft`` of the zero-padded cotangent, ``irfft`` to the conjugated ``rfft``
of the cotangent (with the dual norm), doubled on the bins that stand for two.
They are written in these ops, so they trace and differentiate again.

Example:
    >>> import engine as en
    >>> en.fft.fft(en.tensor([1.0, 0.0, 0.0, 0.0])).tolist()
    [(1+0j), (1+0j), (1+0j), (1+0j)]
"""
import functools

import numpy as np

from .. import dtypes
from ..errors import DomainError, DTypeError, ShapeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from . import _rules, creation
from .complex_parts import conj, real
from .join import concat

__all__ = []   # the public functions are engine.fft's (engine/ops/fft_functions.py)

NORMS = ("backward", "ortho", "forward")
_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
_ACCEPTED = dtypes.NUMERIC | {dtypes.bool_}
_REAL_ACCEPTED = dtypes.REAL | {dtypes.bool_}


@functools.lru_cache(maxsize=None)
def _numpy_dtype(kind, dt, n_axes=1):
    """The result dtype numpy's transform ``kind`` over ``n_axes`` axes gives for input
    dtype ``dt`` (complex64 for float16/float32/complex64, complex128 otherwise; irfft
    of float16 is float16 over one axis, float32 over more, as numpy 2 does)."""
    fn = getattr(np.fft, kind + "n")
    n_axes = min(n_axes, 2)
    return fn(np.ones((4,) * n_axes, dt), axes=tuple(range(n_axes))).dtype


# ---- shape and dtype rules ----------------------------------------------------------------------
def _check(name, x, s, axes, norm, accepted):
    shape, dt = x
    if dt not in accepted:
        what = "a real (or integer, bool)" if accepted is _REAL_ACCEPTED else "a numeric or bool"
        raise DTypeError(f"{name}: expected {what} input, got {describe_inputs([x])}")
    if norm not in NORMS:
        raise DomainError(f"{name}: norm must be one of {NORMS}, got {norm!r}")
    nd = len(shape)
    if not axes or len(s) != len(axes) or any(not -nd <= a < 0 for a in axes) \
            or len(set(axes)) != len(axes):
        raise ShapeError(f"{name}: axes {axes} (lengths {s}) do not fit input "
                         f"{describe_inputs([x])}")
    for n in s:
        if n is not None and n < 1:
            raise ShapeError(f"{name}: invalid number of data points {n} in s={s}; input "
                             f"{describe_inputs([x])}")


def _lengths(shape, s, axes):
    return [shape[a] if n is None else n for n, a in zip(s, axes)]


def _out_shape(shape, axes, lengths):
    out = list(shape)
    for a, n in zip(axes, lengths):
        out[a] = n
    return tuple(out)


def _c2c_eval(name):
    def abstract_eval(x, *, s, axes, norm):
        _check(name, x, s, axes, norm, _ACCEPTED)
        shape = _out_shape(x[0], axes, _lengths(x[0], s, axes))
        return (shape, _numpy_dtype("fft", x[1], len(axes)))
    return abstract_eval


def _rfft_eval(x, *, s, axes, norm):
    _check("rfft", x, s, axes, norm, _REAL_ACCEPTED)
    lengths = _lengths(x[0], s, axes)
    last = lengths[-1]
    lengths[-1] = None if last is None else last // 2 + 1
    return (_out_shape(x[0], axes, lengths), _numpy_dtype("rfft", x[1], len(axes)))


def _irfft_eval(x, *, s, axes, norm):
    _check("irfft", x, s, axes, norm, _ACCEPTED)
    lengths = _lengths(x[0], s, axes)
    if s[-1] is None and lengths[-1] is not None:
        lengths[-1] = 2 * (lengths[-1] - 1)
        if lengths[-1] < 1:
            raise ShapeError(f"irfft: invalid number of data points {lengths[-1]} (an input "
                             f"of length 1 along axis {axes[-1]} without n); input "
                             f"{describe_inputs([x])}")
    return (_out_shape(x[0], axes, lengths), _numpy_dtype("irfft", x[1], len(axes)))


# ---- kernels ------------------------------------------------------------------------------------
def _numpy_kernel(kind):
    fn = getattr(np.fft, kind + "n")

    def impl(x, *, s, axes, norm):
        return fn(x, s=_lengths(x.shape, s, axes), axes=axes, norm=norm)
    impl.__name__ = kind
    return impl


def _irfft_impl(x, *, s, axes, norm):
    out = np.fft.irfftn(x, s=_irfft_lengths(x.shape, s, axes), axes=axes, norm=norm)
    want = _numpy_dtype("irfft", x.dtype, len(axes))
    return out if out.dtype == want else out.astype(want)


def _irfft_lengths(shape, s, axes):
    lengths = _lengths(shape, s, axes)
    if s[-1] is None:
        lengths[-1] = 2 * (shape[axes[-1]] - 1)
    return lengths


def _generic(kind):
    """The standard's ``fft.<kind>n`` (its c2c and c2r transforms take complex input,
    rfftn real floating input), cast to numpy's result dtype."""
    def kernel(be, x, *, s, axes, norm):
        dt = be.dtype_of(x)
        if kind == "rfft":
            if dt not in dtypes.FLOATS:
                x = be.astype(x, dtypes.float32 if dt == dtypes.float16 else dtypes.float64)
        elif dt not in dtypes.COMPLEX:
            x = be.astype(x, dtypes.complex64 if dt in (dtypes.float16, dtypes.float32)
                          else dtypes.complex128)
        lengths = (_irfft_lengths if kind == "irfft" else _lengths)(tuple(x.shape), s, axes)
        out = getattr(be.xp.fft, kind + "n")(x, s=tuple(lengths), axes=axes, norm=norm)
        want = _numpy_dtype(kind, dt, len(axes))
        return out if be.dtype_of(out) == want else be.astype(out, want)
    kernel.__name__ = kind
    return kernel


# ---- gradients (JAX's convention) ---------------------------------------------------------------
def _resized(g, shape, axes):
    """``g`` cut back or zero-padded along ``axes`` to the lengths of ``shape``."""
    for a in axes:
        n, have = shape[a], g.shape[a]
        if n is None or have is None:
            raise ShapeError(f"fft gradient: the lengths along axis {a} must be known "
                             f"(input {tuple(shape)}, cotangent {tuple(g.shape)})")
        if have > n:
            g = g[(slice(None),) * (g.ndim + a) + (slice(0, n),)]
        elif have < n:
            pad = list(g.shape)
            pad[a] = n - have
            g = concat([g, creation.zeros(tuple(pad), dtype=g.dtype)], axis=a)
    return g


def _as_input(gx, x):
    if x.dtype not in dtypes.COMPLEX:
        gx = real(gx)               # a real input: the real part of the cotangent
    return gx if gx.dtype == x.dtype else creation.cast(gx, x.dtype)


def _c2c_vjp(op_name):
    def vjp(g, out, x, *, s, axes, norm):
        if x.dtype not in dtypes.INEXACT:
            return (None,)
        gx = apply(_OPS[op_name], g, s=(None,) * len(axes), axes=axes, norm=norm)
        return (_as_input(_resized(gx, x.shape, axes), x),)
    return vjp


def _rfft_vjp(g, out, x, *, s, axes, norm):
    if x.dtype not in dtypes.FLOATS:
        return (None,)
    n = _lengths(x.shape, s, axes)
    full = list(g.shape)
    full[axes[-1]] = n[-1]
    g = _resized(g, tuple(full), axes[-1:])        # the missing half as zeros
    gx = apply(fft_op, g, s=(None,) * len(axes), axes=axes, norm=norm)
    return (_as_input(_resized(gx, x.shape, axes), x),)


def _irfft_vjp(g, out, x, *, s, axes, norm):
    if x.dtype not in dtypes.INEXACT:
        return (None,)
    n = out.shape[axes[-1]]
    t = conj(apply(rfft_op, g, s=(None,), axes=axes[-1:], norm=_DUAL[norm]))
    t = _twice_inside(t, axes[-1], n)
    if len(axes) > 1:
        t = apply(ifft_op, t, s=(None,) * (len(axes) - 1), axes=axes[:-1], norm=norm)
    return (_as_input(_resized(t, x.shape, axes), x),)


def _twice_inside(t, axis, n):
    """``t`` (the n//2 + 1 bins of a real signal of length ``n`` along ``axis``) with
    the bins that stand for themselves and their mirror images, 1 .. ceil(n/2) - 1,
    doubled."""
    k = (n + 1) // 2
    lead = (slice(None),) * (t.ndim + axis)
    parts = [t[lead + (slice(0, 1),)]]
    if k > 1:
        parts.append(t[lead + (slice(1, k),)] * 2.0)
    if n // 2 + 1 > k:
        parts.append(t[lead + (slice(k, None),)])
    return parts[0] if len(parts) == 1 else concat(parts, axis=axis)


# ---- forward mode and batching ------------------------------------------------------------------
def _linear_jvp(op_name):
    def jvp(primals, tangents, out, **params):
        t = tangents[0]
        return None if t is None else apply(_OPS[op_name], t, **params)
    return jvp


def _batch(op_name):
    def batch(size, args, dims, **params):
        # The axes are negative: with the batch axis first they name the same axes.
        return apply(_OPS[op_name], _rules.move_to_front(args[0], dims[0]), **params), 0
    return batch


def _op(name, abstract_eval, impl, vjp, doc):
    op = register(Op(name, impl, abstract_eval, vjp, n_inputs=1, dtypes=_ACCEPTED
                     if name != "rfft" else _REAL_ACCEPTED, generic=_generic(name), doc=doc))
    # ONNX's DFT works on real tensors with a trailing (re, im) axis, and the engine
    # exports no complex tensors: no ONNX form.
    declare(op, onnx=None, jvp=_linear_jvp(name), batch=_batch(name), complex_vjp=True)
    return op


fft_op = _op("fft", _c2c_eval("fft"), _numpy_kernel("fft"), _c2c_vjp("fft"),
             "The discrete Fourier transform over ``axes`` (numpy's fftn).")
ifft_op = _op("ifft", _c2c_eval("ifft"), _numpy_kernel("ifft"), _c2c_vjp("ifft"),
              "The inverse discrete Fourier transform over ``axes`` (numpy's ifftn).")
rfft_op = _op("rfft", _rfft_eval, _numpy_kernel("rfft"), _rfft_vjp,
              "The DFT of real input over ``axes``, the last axis halved (numpy's rfftn).")
irfft_op = _op("irfft", _irfft_eval, _irfft_impl, _irfft_vjp,
               "The inverse of rfft: real output over ``axes`` (numpy's irfftn).")
_OPS = {"fft": fft_op, "ifft": ifft_op, "rfft": rfft_op, "irfft": irfft_op}
