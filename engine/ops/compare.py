"""Comparisons, logical ops and ``where``. Comparisons have no gradient (bool output);
complex numbers compare in numpy's lexicographic order."""
import numpy as np

from .. import dtypes
from ..errors import DTypeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from ..shapes import broadcast_shapes
from ._args import int_beside
from ._define import binary, call, unary, unbroadcast
from . import complex_order, creation

_B = dtypes.bool_
_ALL = dtypes.ALL
# Complex numbers compare as numpy orders them, lexicographically (the standard leaves
# their order out; see complex_order.py).
_ORDERED = dtypes.NUMERIC | {_B}

equal_op = binary("equal", "equal", None, allowed=_ALL, what="any", out_dtype=_B,
                  commutative=True, doc="Elementwise ``x == y`` (bool).")
declare(equal_op, onnx=("compare", "Equal"), scalar_form="{0} == {1}", positional_out=True)
not_equal_op = binary("not_equal", "not_equal", None, allowed=_ALL, what="any", out_dtype=_B,
                      commutative=True, doc="Elementwise ``x != y`` (bool).")
declare(not_equal_op, onnx=("compare", "Equal", "not"), scalar_form="{0} != {1}", positional_out=True)


def _ordering(name, symbol, onnx, doc):
    op = binary(name, getattr(np, name), None, out_dtype=_B, allowed=_ORDERED, what="numeric or bool",
                generic=complex_order.comparison_kernel(name), doc=doc)
    declare(op, onnx=onnx, scalar_form=complex_order.real_only("{0} %s {1}" % symbol),
            positional_out=True)
    return op


less_op = _ordering("less", "<", ("compare", "Less"), "Elementwise ``x < y`` (bool).")
less_equal_op = _ordering("less_equal", "<=", ("compare", "LessOrEqual"), "Elementwise ``x <= y``.")
greater_op = _ordering("greater", ">", ("compare", "Greater"), "Elementwise ``x > y``.")
greater_equal_op = _ordering("greater_equal", ">=", ("compare", "GreaterOrEqual"),
                             "Elementwise ``x >= y``.")


def _logical(name):
    """A logical op written against the namespace: numbers count as ``x != 0``
    (numpy's truth), the standard's logical functions take only bools."""
    def kernel(be, *arrays):
        truths = [a if be.dtype_of(a) == _B else a != 0 for a in arrays]
        return getattr(be.xp, name)(*truths)
    kernel.__name__ = name
    return kernel


logical_and_op = binary("logical_and", np.logical_and, None, allowed=_ALL, what="any",
                        out_dtype=_B, commutative=True, doc="Elementwise logical and.",
                        generic=_logical("logical_and"))
declare(logical_and_op, onnx=("logical", "And"), scalar_form="(bool({0}) and bool({1}))",
        positional_out=True)
logical_or_op = binary("logical_or", np.logical_or, None, allowed=_ALL, what="any",
                       out_dtype=_B, commutative=True, doc="Elementwise logical or.",
                       generic=_logical("logical_or"))
declare(logical_or_op, onnx=("logical", "Or"), scalar_form="(bool({0}) or bool({1}))",
        positional_out=True)
logical_not_op = unary("logical_not", np.logical_not, None, allowed=_ALL, what="any",
                       out_dtype=_B, doc="Elementwise logical not.", generic=_logical("logical_not"))
declare(logical_not_op, onnx=("logical", "Not"), scalar_form="(not bool({0}))", positional_out=True)



def _comparison(op):
    """The public function of a comparison: like ``call(op)``, except that a Python
    int too large for the other side's integer dtype compares exactly, as in
    numpy 2 (``int32_tensor < 2**40`` is all True), instead of overflowing."""
    def f(x, y):
        if type(y) is int:
            y = int_beside(y, x)
        elif type(x) is int:
            x = int_beside(x, y)
        return apply(op, x, y)
    f.__name__ = op.name
    f.__doc__ = op.doc
    return f


equal = _comparison(equal_op)
not_equal = _comparison(not_equal_op)
less = _comparison(less_op)
less_equal = _comparison(less_equal_op)
greater = _comparison(greater_op)
greater_equal = _comparison(greater_equal_op)
logical_and = call(logical_and_op)
logical_or = call(logical_or_op)
logical_not = call(logical_not_op)


def _where_eval(cond, x, y):
    if cond[1] != _B:
        raise DTypeError(f"where: the condition must be bool, got {describe_inputs([cond, x, y])}")
    shape = broadcast_shapes(cond[0], x[0], y[0], op_name="where")
    return (shape, np.result_type(x[1], y[1]))


def _where_vjp(g, out, cond, x, y):
    zero = creation.zeros_like(g)
    return (None, unbroadcast(where(cond, g, zero), x.shape),
            unbroadcast(where(cond, zero, g), y.shape))


def _where_impl(cond, x, y):
    out = np.where(cond, x, y)
    return out


def _where_out(cond, x, y, out):
    # np.where into a temporary, then one copy: numpy's masked copyto (copyto(where=))
    # is slower (5.6 against 3.1 ms on a 64x28x28x16 float32 ReLU gradient), and reading
    # every input before writing ``out`` makes any aliasing safe.
    np.copyto(out, np.where(cond, x, y))
    return out


def _where_generic(be, cond, x, y):
    return be.xp.where(cond, *be.promote(x, y))


where_op = register(Op("where", _where_impl, _where_eval, _where_vjp, elementwise=True,
                       n_inputs=3, dtypes=_ALL, out_impl=_where_out, generic=_where_generic,
                       doc="``x`` where ``cond`` is true, else ``y``, with broadcasting."))
declare(where_op, onnx=("Where",), scalar_form="({1} if {0} else {2})")
_where_call = call(where_op)


def where(condition, x, y):
    """``x`` where ``condition`` is true, else ``y``, with broadcasting. A condition that is
    not bool counts by its truth, as in numpy: non-zero is true (NaN too).

    Example:
        >>> import engine as en
        >>> en.where(en.tensor([0, 2, -1]), 1.0, 0.0).tolist()
        [0.0, 1.0, 1.0]
    """
    dtype = getattr(condition, "dtype", None)
    dtype = getattr(dtype, "_np_dtype", dtype)     # another back end's array: numpy's dtype
    if isinstance(condition, (list, tuple)):
        # a nested list: its truth, as numpy reads it, kept a list (lifted onto the back
        # end of x and y, as lists are)
        values = np.asarray(condition)
        if values.dtype != _B:
            condition = (values != 0).tolist()
    elif dtype is not None and dtype != _B:
        condition = not_equal(condition, 0)
    elif type(condition) in (bool, int, float, complex):
        condition = np.asarray(bool(condition))   # (lifted weakly, True beside floats is 1.0)
    return _where_call(condition, x, y)


# ---- forward mode (see engine.op.RULE_KINDS): comparisons have no float result ---------------
def _where_jvp(primals, tangents, out):
    c, x, y = primals
    _, tx, ty = tangents
    return where(c, creation.zeros_like(x) if tx is None else tx,
                 creation.zeros_like(y) if ty is None else ty)


declare(where_op, jvp=_where_jvp)
