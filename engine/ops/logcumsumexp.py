"""``logcumsumexp``: the running ``log(sum(exp(x)))`` along one axis (PyTorch's
``torch.logcumsumexp``), computed stably as ``np.logaddexp.accumulate``.

The gradient of ``out_j`` by ``x_k`` (k <= j) is ``exp(x_k - out_j)``, at most 1. The VJP
sums ``g_j exp(x_k - out_j)`` over ``j >= k`` in O(n) without overflow, as PyTorch and
TensorFlow do: the positive and the negative parts of ``g`` each go through a reversed
``logcumsumexp`` in log space. A zero part is a very negative finite number there (not
``-inf``), so that differentiating the VJP again (Hessians) meets no ``inf - inf``.

Example:
    >>> import engine as en
    >>> en.logcumsumexp(en.tensor([0.0, 0.0, 0.0])).numpy().round(4)
    array([0.    , 0.6931, 1.0986])
"""
import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from ..shapes import normalize_axis
from . import _rules, compare, creation, elementwise as ew, shape_ops
from .cumulative import as_tensor, user_axis


def _eval(x, *, axis, reverse):
    if x[1] not in dtypes.FLOATS:
        raise DTypeError(f"logcumsumexp: expected a floating-point input, got "
                         f"{describe_inputs([x])}")
    if not x[0]:
        raise ShapeError(f"logcumsumexp: a 0-d input {describe_inputs([x])} has no axis to "
                         "accumulate along")
    normalize_axis(axis, len(x[0]), "logcumsumexp")
    return x


def _impl(x, *, axis, reverse):
    if reverse:
        return np.flip(np.logaddexp.accumulate(np.flip(x, axis), axis=axis), axis)
    return np.logaddexp.accumulate(x, axis=axis)


def _generic(be, x, *, axis, reverse):
    # The standard has no running logaddexp: log2(n) steps of "logaddexp with the values
    # s places before" (s = 1, 2, 4, ...), padded with -inf.
    xp = be.xp
    work = xp.flip(x, axis=axis) if reverse else x
    n = x.shape[axis]
    lead = (slice(None),) * axis
    s = 1
    while s < n:
        pad_shape = work.shape[:axis] + (s,) + work.shape[axis + 1:]
        shifted = xp.concat([xp.full(pad_shape, -np.inf, dtype=work.dtype),
                             work[lead + (slice(0, n - s), Ellipsis)]], axis=axis)
        work = xp.logaddexp(work, shifted)
        s *= 2
    return xp.flip(work, axis=axis) if reverse else work


def _log_part(v, positive, floor):
    """``log(|v|)`` where ``v`` has the sign asked for, else ``floor`` (finite)."""
    take = compare.greater(v, 0) if positive else compare.less(v, 0)
    mag = v if positive else -v
    return take, compare.where(take, ew.log(compare.where(take, mag, creation.ones_like(v))),
                               floor)


def _floor(x):
    # exp(floor + anything finite here) is 0; floor + log(n) stays finite.
    return creation.zeros_like(x) + float(np.finfo(x.dtype).min / 4)


def _vjp(g, out, x, *, axis, reverse):
    floor = _floor(x)
    parts = []
    for positive in (True, False):
        take, logs = _log_part(g, positive, floor)
        back = apply(logcumsumexp_op, compare.where(take, logs - out, floor), axis=axis,
                     reverse=not reverse)
        parts.append(ew.exp(back + x))
    return (parts[0] - parts[1],)


def _jvp(primals, tangents, out, *, axis, reverse):
    (x,), (t,) = primals, tangents
    floor = _floor(x)
    parts = []
    for positive in (True, False):
        take, logs = _log_part(t, positive, floor)
        ahead = apply(logcumsumexp_op, compare.where(take, logs + x, floor), axis=axis,
                      reverse=reverse)
        parts.append(ew.exp(ahead - out))
    return parts[0] - parts[1]


logcumsumexp_op = register(Op("logcumsumexp", _impl, _eval, _vjp, n_inputs=1,
                              dtypes=dtypes.FLOATS, generic=_generic,
                              doc="Running ``log(sum(exp(x)))`` along ``axis`` (from the end "
                                  "when ``reverse``)."))
declare(logcumsumexp_op, onnx=None, jvp=_jvp, batch=_rules.batch_with_axis(logcumsumexp_op))


def logcumsumexp(x, axis=None):
    """The running ``log(sum(exp(x)))`` along ``axis`` (over the flattened input when
    None), as PyTorch's ``torch.logcumsumexp(input, dim)``: stable for large and very
    negative values (``-inf`` is a zero term). It takes floating-point inputs, as
    PyTorch's (cast integers first: ``en.logcumsumexp(x.astype(float))``).

    Example:
        >>> import engine as en
        >>> en.logcumsumexp(en.tensor([1000.0, 1000.0]), axis=0).numpy()
        array([1000.        , 1000.69314718])
    """
    x = as_tensor(x)
    if axis is None:
        x, axis = shape_ops.reshape(x, (-1,)), 0
    axis = user_axis(axis, x.ndim, "logcumsumexp") if x.ndim else axis
    return apply(logcumsumexp_op, x, axis=axis, reverse=False)


__all__ = ["logcumsumexp", "logcumsumexp_op"]
