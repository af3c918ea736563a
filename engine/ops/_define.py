"""Helpers that build registry entries for families of ops (one rule, many ops)."""
from collections.abc import Callable
from typing import Any

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


def unary_rule(name, allowed, what, out_dtype=None, to_float=False, ufunc=None):
    """Shape rule for a one-input elementwise op: same shape, dtype kept or fixed
    (``out_dtype``: a dtype, or a function of the input's dtype).
    With ``to_float``, bool and integer inputs are accepted too and give numpy's
    floating result dtype (``exp`` of int64 is float64, see ``dtypes.float_result``).
    With ``ufunc`` (numpy's function of the op), a bool input outside ``allowed`` is
    typed by its loop where it has one (``abs`` and ``floor`` of bools are bools,
    ``square`` int8)."""
    def abstract_eval(x):
        dt = x[1]
        if dt not in allowed:
            if to_float and (dt in dtypes.INTS or dt == dtypes.bool_):
                dt = dtypes.float_result(dt)
            elif dt == dtypes.bool_ and _has_bool_loop(ufunc):
                dt = ufunc.resolve_dtypes((dt, None))[-1]
            else:
                raise DTypeError(f"{name}: expected {what} input, got {describe_inputs([x])}")
        if out_dtype is None:
            return (x[0], dt)
        return (x[0], out_dtype(dt) if callable(out_dtype) else out_dtype)
    return abstract_eval


def binary_rule(name, allowed, what, out_dtype=None, true_divide=False, ufunc=None):
    """Shape rule for a two-input elementwise op with numpy broadcasting and promotion.
    Two bools promote as numpy's loop for ``ufunc`` does (``True + True`` is bool,
    ``True ** True`` int8, ``True - True`` an error)."""
    def abstract_eval(x, y):
        if (x[1] not in allowed or y[1] not in allowed) and not _bool_joins(ufunc, x, y, allowed):
            raise DTypeError(f"{name}: expected {what} inputs, got {describe_inputs([x, y])}")
        try:
            shape = broadcast_shapes(x[0], y[0], op_name=name)
        except ShapeError as err:  # name every input's shape and dtype, as other rules do
            raise ShapeError(f"{err}; inputs {describe_inputs([x, y])}") from None
        if out_dtype is not None:
            return (shape, out_dtype)
        if x[1] == dtypes.bool_ and y[1] == dtypes.bool_ and ufunc is not None:
            return (shape, _bool_loop(name, ufunc, x, y))
        if ufunc is not None:     # the dtype of numpy's own loop (arctan2 of int8: float16)
            try:
                return (shape, ufunc.resolve_dtypes((x[1], y[1], None))[-1])
            except TypeError:
                raise DTypeError(f"{name}: not defined for {describe_inputs([x, y])}") from None
        dt = np.result_type(x[1], y[1])
        if true_divide and dt not in dtypes.INEXACT:
            dt = dtypes.float64
        return (shape, dt)
    return abstract_eval


def _has_bool_loop(ufunc):
    if ufunc is None:
        return False
    try:
        ufunc.resolve_dtypes((dtypes.bool_, None))
    except TypeError:
        return False
    return True


def _bool_joins(ufunc, x, y, allowed):
    """Whether numpy's ``ufunc`` takes a bool where the op's own dtypes have none: every
    input outside ``allowed`` is a bool (``float - bool``, ``int >> bool``, ``bool // bool``;
    numpy reads it as 0 or 1). Its loop then types the result, or refuses (``bool - bool``)."""
    return ufunc is not None and all(a[1] in allowed or a[1] == dtypes.bool_ for a in (x, y))


def _bools_as_int8(generic, ufunc, n):
    """A generic kernel that also takes bool inputs where numpy's ``ufunc`` has a loop for
    them and the op's own kernel (the standard's function) has none: all-bool inputs
    compute as int8 (0 and 1) and the result takes the dtype of numpy's loop."""
    if generic is None:
        return None
    if isinstance(generic, str):
        name = generic

        def generic(be, *xs):
            return be.function(name)(*xs)     # (which promotes mixed inputs)
        generic.__name__ = name
    inner = generic
    out_dtype = ufunc.resolve_dtypes((dtypes.bool_,) * n + (None,))[-1]

    def kernel(be, *xs):
        if not all(be.dtype_of(x) == dtypes.bool_ for x in xs):
            return inner(be, *xs)
        result = inner(be, *[be.astype(x, dtypes.int8) for x in xs])
        return result if be.dtype_of(result) == out_dtype else be.astype(result, out_dtype)
    kernel.__name__ = getattr(inner, "__name__", "kernel")
    return kernel


def _with_loops(ufunc, candidates):
    """The dtypes among ``candidates`` that ``ufunc`` has a loop for (taking every input
    of that dtype): what an op on the ufunc can claim."""
    out = set()
    for dt in candidates:
        try:
            ufunc.resolve_dtypes((dt,) * ufunc.nin + (None,) * ufunc.nout)
        except TypeError:
            continue
        out.add(dt)
    return frozenset(out)


def _bool_loop(name, ufunc, x, y):
    """The result dtype of numpy's loop for ``ufunc`` on two bools, or a DTypeError."""
    try:
        return ufunc.resolve_dtypes((dtypes.bool_, dtypes.bool_, None))[-1]
    except TypeError as err:   # numpy refuses bool - bool: say so, naming the op
        raise DTypeError(f"{name}: not defined for two bool inputs ({err}); got "
                         f"{describe_inputs([x, y])}") from None


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


def _to_float_generic(generic, allowed):
    """A generic kernel that converts bool and integer inputs to numpy's floating
    result dtype first (the standard's functions take floating inputs only)."""
    if generic is None:
        return None
    if isinstance(generic, str):
        name = generic

        def generic(be, x):
            return getattr(be.xp, name)(x)
        generic.__name__ = name
    inner = generic

    def kernel(be, x):
        dt = be.dtype_of(x)
        if dt not in allowed:
            x = be.astype(x, dtypes.float_result(dt))
        return inner(be, x)
    kernel.__name__ = getattr(inner, "__name__", "kernel")
    return kernel


def unary(name, impl, vjp, *, allowed=dtypes.FLOATS, what="floating-point", out_dtype=None,
          differentiable=True, doc="", out_impl=None, generic=None, to_float=None, loops=None):
    """Define and register a one-input elementwise op. ``impl`` is the name of an
    array-namespace function (the kernel on every back end) or numpy's kernel,
    with ``generic`` the kernel written against the namespace.

    ``to_float``: the op also takes bool and integer inputs and computes in numpy's
    floating result dtype (``exp`` of an int64 tensor is float64). The default is
    True for an op on floating inputs only whose numpy kernel is a ufunc (the ufunc
    converts them itself); a custom kernel must handle such inputs to ask for it.
    ``loops``: numpy's ufunc when ``impl`` is a function around it, whose loops type a
    bool input the op's own dtypes leave out (see :func:`unary_rule`)."""
    impl, generic = _kernels(impl, generic)
    if to_float is None:
        to_float = isinstance(impl, np.ufunc) and not (allowed & (dtypes.INTS | {dtypes.bool_}))
    accepted = allowed
    if to_float:
        generic = _to_float_generic(generic, allowed)
        accepted = allowed | dtypes.INTS | {dtypes.bool_}
    if isinstance(impl, np.ufunc):
        accepted = _with_loops(impl, accepted)
    ufunc = impl if isinstance(impl, np.ufunc) else loops
    if isinstance(impl, np.ufunc):   # (the rule refuses what numpy's loops refuse: signbit(1j))
        allowed = allowed & (accepted | dtypes.INTS | {dtypes.bool_})
    if dtypes.bool_ not in accepted and _has_bool_loop(ufunc):
        accepted = accepted | {dtypes.bool_}
        generic = _bools_as_int8(generic, ufunc, 1)
    return register(Op(name, impl, unary_rule(name, allowed, what, out_dtype, to_float, ufunc), vjp,
                       elementwise=True, n_inputs=1, dtypes=accepted,
                       differentiable=differentiable, doc=doc,
                       out_impl=_default_out_impl(impl, out_impl), generic=generic))


def binary(name, impl, vjp, *, allowed=dtypes.NUMERIC | {dtypes.bool_}, what="numeric or bool",
           out_dtype=None, commutative=False, true_divide=False, doc="", out_impl=None,
           vjp_needs=False, generic=None, loops=None):
    """Define and register a two-input broadcasting elementwise op (``impl`` and
    ``generic`` as for :func:`unary`). Two bool inputs are typed by numpy's loop when
    ``impl`` is a ufunc (see :func:`binary_rule`); ``loops`` names that ufunc when
    ``impl`` is a function around it."""
    impl, generic = _kernels(impl, generic)
    ufunc = impl if isinstance(impl, np.ufunc) else loops
    if ufunc is not None:   # bool stays: it mixes with numbers even where bool-bool has no loop
        allowed = _with_loops(ufunc, allowed) | (allowed & {dtypes.bool_})
        if dtypes.bool_ not in allowed and _with_loops(ufunc, {dtypes.bool_}):
            allowed = allowed | {dtypes.bool_}     # numpy's loop takes two bools (bool // bool)
            generic = _bools_as_int8(generic, ufunc, 2)
    return register(Op(name, impl, binary_rule(name, allowed, what, out_dtype, true_divide, ufunc),
                       vjp, elementwise=True, commutative=commutative, n_inputs=2, dtypes=allowed,
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


def call(op: Op) -> Callable[..., Any]:
    """A public function ``f(*inputs, **params)`` for ``op`` (see ``engine.modes.op_function``)."""
    return op_function(op)
