"""Helpers that build registry entries for families of ops (one rule, many ops)."""
import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError, describe_inputs
from ..modes import op_function
from ..op import Op, register
from ..shapes import broadcast_shapes


def check_dtypes(name, avals, allowed, what):
    """Raise a DTypeError naming the op and every input when a dtype is not allowed."""
    for _, dt in avals:
        if dt not in allowed:
            raise DTypeError(
                f"{name}: expected {what} inputs, got {describe_inputs(avals)}")


def check_arity(name, avals, n):
    if len(avals) != n:
        raise ShapeError(f"{name}: expected {n} inputs, got {len(avals)}")


def unary_rule(name, allowed, what, out_dtype=None):
    """Shape rule for a one-input elementwise op: same shape, dtype kept or fixed."""
    def abstract_eval(x):
        if x[1] not in allowed:
            raise DTypeError(f"{name}: expected {what} input, got {describe_inputs([x])}")
        return (x[0], out_dtype or x[1])
    return abstract_eval


def binary_rule(name, allowed, what, out_dtype=None, true_divide=False):
    """Shape rule for a two-input elementwise op with numpy broadcasting and promotion."""
    def abstract_eval(x, y):
        if x[1] not in allowed or y[1] not in allowed:
            raise DTypeError(f"{name}: expected {what} inputs, got {describe_inputs([x, y])}")
        try:
            shape = broadcast_shapes(x[0], y[0], op_name=name)
        except ShapeError as err:  # name every input's shape and dtype, as other rules do
            raise ShapeError(f"{err}; inputs {describe_inputs([x, y])}") from None
        if out_dtype is not None:
            return (shape, out_dtype)
        dt = np.result_type(x[1], y[1])
        if true_divide and dt not in dtypes.FLOATS:
            dt = dtypes.float64
        return (shape, dt)
    return abstract_eval


def _kernels(impl, generic):
    """``(numpy kernel, generic kernel)``: a namespace function's name serves both."""
    if isinstance(impl, str):
        return getattr(np, impl), impl
    return impl, generic


def _default_out_impl(impl, out_impl):
    # A numpy ufunc takes out= itself.
    if out_impl is None and isinstance(impl, np.ufunc):
        return impl
    return out_impl


def unary(name, impl, vjp, *, allowed=dtypes.FLOATS, what="floating-point", out_dtype=None,
          differentiable=True, doc="", out_impl=None, generic=None):
    """Define and register a one-input elementwise op. ``impl`` is the name of an
    array-namespace function (the kernel on every back end) or numpy's kernel,
    with ``generic`` the kernel written against the namespace."""
    impl, generic = _kernels(impl, generic)
    return register(Op(name, impl, unary_rule(name, allowed, what, out_dtype), vjp,
                       elementwise=True, n_inputs=1, dtypes=allowed,
                       differentiable=differentiable, doc=doc,
                       out_impl=_default_out_impl(impl, out_impl), generic=generic))


def binary(name, impl, vjp, *, allowed=dtypes.NUMERIC, what="numeric", out_dtype=None,
           commutative=False, true_divide=False, doc="", out_impl=None, vjp_needs=False,
           generic=None):
    """Define and register a two-input broadcasting elementwise op (``impl`` and
    ``generic`` as for :func:`unary`)."""
    impl, generic = _kernels(impl, generic)
    return register(Op(name, impl, binary_rule(name, allowed, what, out_dtype, true_divide), vjp,
                       elementwise=True, commutative=commutative, n_inputs=2, dtypes=allowed,
                       doc=doc, out_impl=_default_out_impl(impl, out_impl),
                       vjp_needs=vjp_needs, generic=generic))


def unbroadcast(g, shape):
    """Sum the cotangent ``g`` back down to ``shape`` (undo numpy broadcasting).

    The one helper every VJP uses; written in engine ops so it can be traced
    and differentiated again. It calls them as the tensor's own methods
    (``g.sum``, ``g.reshape``): the reductions' VJPs broadcast, so this module,
    which every op family imports, cannot import the reductions.
    """
    gshape = g.shape
    if gshape == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    for i, d in enumerate(shape):
        gd = gshape[lead + i]
        if d == 1 and gd != 1:
            axes.append(lead + i)
    if axes:
        g = g.sum(axis=tuple(axes), keepdims=False)
    if g.shape != tuple(shape):
        g = g.reshape(tuple(-1 if d is None else d for d in shape))
    return g


def call(op):
    """A public function ``f(*inputs, **params)`` for ``op`` (see ``engine.modes.op_function``)."""
    return op_function(op)
